import DictionaryCodec
import DictionaryTransport
import HTTPTypes

/// Which of dcb and dcz to send for a small body once negotiation chose a dictionary coding without
/// knowing both sizes (issue #16; #13 item 6: the smaller known size wins).
///
/// Negotiation (pure) ranks the two by server preference when the sizes are not known yet. For a
/// small body that choice is often the wrong one: brotli's built-in dictionary helps English text,
/// the dcb header is 4 bytes shorter, and on bodies of a few hundred bytes zstd's block overhead
/// shows. So the middleware encodes the other dictionary coding too (both go into the variant
/// cache) and sends the smaller; a later identical request finds both sizes known and negotiation
/// decides alone. Only for bodies up to ``maximumBodyBytes``: two encodes of a large body on the
/// request path would cost more than the few bytes they save.
///
/// Pure; thread-safe.
enum DictionaryCodingComparison {
    /// Largest identity body for which both dictionary codings are encoded.
    static let maximumBodyBytes = 16 << 10

    /// The other dictionary coding: dcb for dcz, dcz for dcb.
    static func counterpart(of coding: ContentCoding) -> ContentCoding { coding == .dcz ? .dcb : .dcz }

    /// The dictionary coding to encode as well as `chosen`, or nil: the other of dcb/dcz when the
    /// server produces it (`allowed`), the client gives it the same weight as `chosen`, its size
    /// against this dictionary is not known yet, and the body is at most ``maximumBodyBytes``.
    static func rival(of chosen: ContentCoding, request: HTTPFields, allowed: [ContentCoding],
                      bodySize: Int, rivalSizeKnown: Bool) -> ContentCoding? {
        guard chosen.usesDictionary, bodySize <= maximumBodyBytes, !rivalSizeKnown else { return nil }
        let other = counterpart(of: chosen)
        guard allowed.contains(other) else { return nil }
        let accept = AcceptEncoding(request)
        let weight = accept.weight(of: chosen)
        return weight > 0 && accept.weight(of: other) == weight ? other : nil
    }
}
