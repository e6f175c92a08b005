import DictionaryCodec
import DictionaryTransport
import HTTPTypes

/// Which coding of a pair to send for a small body once negotiation chose one of them without
/// knowing both sizes: dcb or dcz, and brotli or zstd for a plain coding.
/// The smaller known size wins.
///
/// Negotiation (pure) ranks the two of a pair by server preference when the sizes are not known yet.
/// For a small body that choice is often the wrong one: brotli's built-in dictionary helps English
/// text, the dcb header is 4 bytes shorter, and on bodies of a few hundred bytes zstd's block
/// overhead shows. So the middleware encodes the other coding of the pair too (both go into the
/// variant cache) and sends the smaller; a later identical request finds both sizes known and
/// negotiation decides alone. Only for bodies up to ``maximumBodyBytes``: two encodes of a large
/// body on the request path would cost more than the few bytes they save.
///
/// Pure; thread-safe.
enum SmallBodyCodingComparison {
    /// Largest identity body for which both codings of a pair are encoded.
    static let maximumBodyBytes = 16 << 10

    /// The coding to encode as well as `chosen`, or nil: its counterpart
    /// (``CodingChoice/counterpart(of:)``) when the server produces it
    /// (`allowed`), the client gives it the same weight as `chosen`, its size (for this body, and
    /// this dictionary for a dictionary coding) is not known yet, and the body is at most
    /// ``maximumBodyBytes``.
    static func rival(of chosen: ContentCoding, request: HTTPFields, allowed: [ContentCoding],
                      bodySize: Int, rivalSizeKnown: @autoclosure () -> Bool) -> ContentCoding? {
        // The size lookup (a variant-cache probe) last: only for a small body with a counterpart.
        guard bodySize <= maximumBodyBytes, let other = CodingChoice.counterpart(of: chosen), allowed.contains(other),
              !rivalSizeKnown() else { return nil }
        let accept = AcceptEncoding(request)
        let weight = accept.weight(of: chosen)
        return weight > 0 && accept.weight(of: other) == weight ? other : nil
    }
}
