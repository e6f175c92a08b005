import DictionaryCodec
import DictionaryTransport
import HTTPServer
import HTTPTypes

/// Streamed bodies: coded on the fly with the client's best plain coding.
extension DictionaryCompressionMiddleware {
    /// A streamed 200 response to GET (a proxied body too large to buffer) compressed on the fly at
    /// the fast level with the client's best plain coding; unchanged but for `Vary` when identity is
    /// this client's best; nil when it must pass as it is (not GET 200, already encoded, no-transform,
    /// an event stream, an already-compressed media type).
    func streamingEncoded(_ request: HTTPServerRequest, _ response: HTTPServerResponse, _ body: StreamBody) -> HTTPServerResponse? {
        let fields = response.head.headerFields
        guard request.method == .get, response.head.status == .ok,
              fields[.contentEncoding].map({ $0.lowercased() == "identity" }) ?? true,
              fields[.contentRange] == nil, !ProxyResponseHeaders.forbidsTransform(fields) else { return nil }
        let contentType = (fields[.contentType] ?? "").lowercased()
        guard !contentType.hasPrefix("text/event-stream"),
              !CompressionEligibility.isPrecompressed(contentType: contentType)
        else { return nil }
        let accepted = AcceptEncoding(request.head.headerFields)
        var best: (coding: ContentCoding, weight: Int)?
        for coding in settings.preference where !coding.usesDictionary && coding != .identity {
            let weight = accepted.weight(of: coding)
            if weight > 0 && weight > (best?.weight ?? 0) { best = (coding, weight) }
        }
        var out = response
        guard let coding = best?.coding else {
            // Identity is this client's best, but other clients get this resource compressed: a cache
            // must know the representation depends on Accept-Encoding (RFC 9110 §12.5.5).
            addVary(to: &out.head.headerFields, scope: rules.dictionaryScope(for: request.pathWithoutQuery))
            return out
        }
        let level = settings.fastLevels[coding] ?? coding.defaultLevel(.onTheFly)
        out.body = .stream(StreamingEncodedBody.wrap(body, coding: coding, level: level))
        out.head.headerFields[.contentEncoding] = coding.rawValue
        out.head.headerFields[.contentLength] = nil
        out.head.headerFields[.acceptRanges] = nil
        IntegrityFields.remove(from: &out.head.headerFields)
        if let etag = fields[.eTag] {
            out.head.headerFields[.eTag] = VariantETag.make(from: etag, coding: coding, dictionary: nil)
        }
        addVary(to: &out.head.headerFields, scope: rules.dictionaryScope(for: request.pathWithoutQuery))
        return out
    }
}
