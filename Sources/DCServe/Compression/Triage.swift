import DictionaryTransport
import HTTPServer
import HTTPTypes

/// The cheap first look at a response: pass it on, or read and negotiate it.
extension DictionaryCompressionMiddleware {
    /// What `process` does with a non-stream response, decided without reading its body: pass it
    /// (nearly) as it is, or read, hash and negotiate it (`work`, with what was looked up).
    enum Triage {
        case passThrough(HTTPServerResponse, conditional: Bool, replayable: Bool, reason: DecisionReason)
        case work(advertising: DictionaryRuleSet.Rule?, scope: DictionaryScope?, compressible: Bool, path: Substring)
    }

    /// The cheap part of `process` (no body read): status, size, HEAD of a proxied resource,
    /// no-transform, nothing to advertise or compress, an identity-only client.
    func triage(_ request: HTTPServerRequest, _ response: HTTPServerResponse) -> Triage {
        guard response.statusCode == 200 else { return .passThrough(response, conditional: false, replayable: false, reason: .notOK) }
        guard let length = response.body.knownLength else {
            return .passThrough(response, conditional: false, replayable: false, reason: .streamed)
        }
        // The client's If-None-Match / If-Modified-Since may have been kept from the inner handler
        // (``forwardsConditions(_:)``): they are evaluated here on what passes (a file's or an
        // upstream's own validators), so a match still gets its 304.
        guard length <= Self.maximumBodyBytes else {
            return .passThrough(response, conditional: true, replayable: false, reason: .tooLarge)
        }
        if request.head.method == .head && !response.isContentAddressed && !answersHeadAsGet(request.pathWithoutQuery) {
            // A proxied HEAD has no body to store, hash or measure: its head passes as the upstream sent it.
            return .passThrough(response, conditional: true, replayable: false, reason: .head)
        }
        let fields = TriageFields(response)  // one pass over the head
        if fields.forbidsTransform {
            // Cache-Control: no-transform (RFC 9110 §7.7): no recoding, no dictionary, no storing.
            return .passThrough(response, conditional: true, replayable: true, reason: .noTransform)
        }
        let path = request.pathWithoutQuery
        let alreadyEncoded = fields.contentEncoding.map { $0.lowercased() != "identity" } ?? false
        // No identity, no dictionary: a body still in a coding (one the proxy could not decode: truncated,
        // over the decode cap, an unknown coding) is never advertised or stored.
        let advertising = alreadyEncoded ? nil : rules.advertisingRule(for: path)
        let scope = rules.dictionaryScope(for: path)
        let tooSmall = Int(length) < settings.minimumBytes
        let precompressed = precompressedTypes.value(for: fields.contentType ?? "") { CompressionEligibility.isPrecompressed(contentType: $0) }
        let compressible = !alreadyEncoded && !tooSmall && !precompressed
        guard advertising != nil || compressible else {
            let reason: DecisionReason = alreadyEncoded ? .upstreamEncoded : tooSmall ? .bodyTooSmall : .precompressedMediaType
            return .passThrough(response, conditional: true, replayable: true, reason: reason)
        }
        if advertising == nil, !AcceptEncoding(request.head.headerFields).acceptsAny(of: settings.preference) {
            // Identity-only client and nothing to advertise: the inner response as it is (no read, no
            // hash), with the Vary every variant of a compressible resource carries.
            var out = response
            if scope == nil && !fields.hasVary {
                // What addVary gives without a Vary line: one new line (no merge, no strings built; a
                // forwarded head stays forwarded).
                out.appendHeader(HTTPField(name: .vary, value: "Accept-Encoding"))
            } else {
                addVary(to: &out.head.headerFields, scope: scope)
            }
            return .passThrough(out, conditional: true, replayable: true, reason: .identityOnlyClient)
        }
        return .work(advertising: advertising, scope: scope, compressible: compressible, path: path)
    }
}
