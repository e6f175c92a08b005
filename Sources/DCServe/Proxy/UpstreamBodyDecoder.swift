import DictionaryCodec
import HTTPCore
import HTTPTypes

/// Turns a complete upstream body sent with `Content-Encoding: gzip`, `br` or `zstd` into identity,
/// so the compression middleware can store it as a dictionary, delta-encode it or recode it for the
/// client. Decoding is capped (`maxDecodedBytes`, a decompression-bomb guard) and never applied to a
/// response with `Cache-Control: no-transform`. Pure; thread-safe.
public enum UpstreamBodyDecoder {
    public enum Outcome: Equatable, Sendable {
        /// Nothing to do: identity already, no-transform, or a coding dcserve does not decode
        /// (several codings, unknown tokens): the response passes as the upstream sent it.
        case unchanged
        /// The identity head (no `Content-Encoding`, ETag marked as another representation) and bytes.
        case decoded(HTTPFields, [UInt8])
        /// The body could not be decoded: corrupt or truncated, or (`tooLarge`) its decoded size is over
        /// the limit. The reason is logged; the response passes as the upstream sent it when the client
        /// accepts its coding.
        case failed(String, coding: ContentCoding, tooLarge: Bool)
    }

    public static func decode(_ fields: HTTPFields, body: [UInt8], maxDecodedBytes: Int) -> Outcome {
        guard let coding = decodableCoding(fields) else { return .unchanged }
        let bytes: [UInt8]
        do {
            bytes = try coding.decode(body, limits: DecodeLimits(maxOutput: maxDecodedBytes))
        } catch {
            let tooLarge = if case CodecError.outputLimitExceeded = error { true } else { false }
            return .failed("\(coding) body from upstream: \(error)", coding: coding, tooLarge: tooLarge)
        }
        return .decoded(identityFields(fields), bytes)
    }

    /// The one coding dcserve would undo for a response with `fields`: a single `Content-Encoding`
    /// (besides `identity`) that it decodes, on a response that allows transforming; else nil.
    static func decodableCoding(_ fields: HTTPFields) -> ContentCoding? {
        let codings = fields[values: .contentEncoding].flatMap { $0.fieldMembers(separatedBy: ",") }
            .map { $0.lowercased() }.filter { !$0.isEmpty && $0 != "identity" }
        guard codings.count == 1, let coding = ContentCoding(token: codings[0]),
              ProxyRequestHeaders.decodableCodings.contains(coding),
              !ProxyResponseHeaders.forbidsTransform(fields) else { return nil }
        return coding
    }

    /// The head of the decoded representation: no `Content-Encoding` or `Content-Length`, the ETag
    /// marked as another representation's, and no integrity field of the encoded one (RFC 9530).
    static func identityFields(_ fields: HTTPFields) -> HTTPFields {
        var out = fields
        out[.contentEncoding] = nil
        out[.contentLength] = nil
        IntegrityFields.remove(from: &out)
        if let etag = fields[.eTag] { out[.eTag] = identityETag(etag) }
        return out
    }

    /// The validator of the decoded representation: the upstream's ETag names the encoded bytes, so
    /// the identity bytes get a distinct one (`"x"` → `"x-identity"`, weak stays weak).
    static func identityETag(_ etag: String) -> String {
        let weak = etag.hasPrefix("W/")
        var opaque = Substring(weak ? etag.dropFirst(2) : etag[...])
        if opaque.count >= 2, opaque.hasPrefix("\""), opaque.hasSuffix("\"") { opaque = opaque.dropFirst().dropLast() }
        return (weak ? "W/" : "") + "\"" + opaque + "-identity\""
    }
}
