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
        /// The body could not be decoded within the limits (the reason is logged; the response passes
        /// as the upstream sent it).
        case failed(String)
    }

    public static func decode(_ fields: HTTPFields, body: [UInt8], maxDecodedBytes: Int) -> Outcome {
        let codings = fields[values: .contentEncoding].flatMap { $0.fieldMembers(separatedBy: ",") }
            .map { $0.lowercased() }.filter { !$0.isEmpty && $0 != "identity" }
        guard codings.count == 1, let coding = ContentCoding(token: codings[0]),
              ProxyRequestHeaders.decodableCodings.contains(coding),
              !ProxyResponseHeaders.forbidsTransform(fields) else { return .unchanged }
        let bytes: [UInt8]
        do {
            bytes = try coding.decode(body, limits: DecodeLimits(maxOutput: maxDecodedBytes))
        } catch {
            return .failed("\(coding) body from upstream: \(error)")
        }
        var out = fields
        out[.contentEncoding] = nil
        if let etag = fields[.eTag] { out[.eTag] = identityETag(etag) }
        return .decoded(out, bytes)
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
