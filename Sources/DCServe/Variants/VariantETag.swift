import DictionaryCodec

/// ETags for encoded variants: each variant of a resource gets its own validator derived from the
/// identity ETag, so caches and `If-None-Match` never confuse variants (RFC 9842 §6.2).
///
/// `"abc"` → `W/"abc-br"`, `W/"abc-dcz-<first 16 hex of the dictionary hash>"`: the tag names what the
/// variant is (resource, coding, dictionary), not the level it was encoded at, so a revalidation after
/// the background best-level encode replaced the fast one still gets its 304. Since those two encodes
/// are different bytes of the same content, the tag is weak (RFC 9110 §8.8.1), as nginx makes a gzipped
/// response's ETag.
public enum VariantETag {
    public static func make(from etag: String, coding: ContentCoding, dictionary: DictionaryHash?) -> String {
        guard coding != .identity else { return etag }
        var opaque = Substring(etag.hasPrefix("W/") ? etag.dropFirst(2) : etag[...])
        if opaque.hasPrefix("\"") && opaque.hasSuffix("\"") && opaque.count >= 2 { opaque = opaque.dropFirst().dropLast() }
        var suffix = "-\(coding.rawValue)"
        if let dictionary { suffix += "-" + dictionary.hexPrefix(16) }
        return "W/\"" + opaque + suffix + "\""
    }
}

extension VariantETag {
    /// Whether `tag` names the resource state whose identity ETag is `identity` (strong), for
    /// `If-Match` (RFC 9110 §13.1.1): the identity ETag itself, or a variant ETag made from it
    /// (``make(from:coding:dictionary:)``: the identity's opaque part, `-`, a coding's name). A
    /// variant's tag is weak because its bytes vary with the encode level, but it is made from the
    /// identity's strong validator and names exactly that state plus the coding it was sent with, so
    /// it answers If-Match's question (has the resource changed?) as strongly as the identity ETag.
    /// Any other weak tag (`W/"<identity>"` included), and anything when `identity` is weak, never
    /// matches. Strong variant tags (`"<identity>-br11"`, from earlier releases) match too.
    public static func namesState(_ tag: Substring, identity: String) -> Bool {
        func opaque(_ t: Substring) -> Substring? {
            t.hasPrefix("\"") && t.hasSuffix("\"") && t.count >= 2 ? t.dropFirst().dropLast() : nil
        }
        guard !identity.hasPrefix("W/"), let base = opaque(identity[...]) else { return false }
        func isVariant(_ o: Substring) -> Bool {
            guard o.hasPrefix(base), o.dropFirst(base.count).first == "-" else { return false }
            let suffix = o.dropFirst(base.count + 1)
            return ContentCoding.allCases.contains { $0 != .identity && suffix.hasPrefix($0.rawValue) }
        }
        if tag.hasPrefix("W/") { return opaque(tag.dropFirst(2)).map(isVariant) ?? false }
        guard let o = opaque(tag) else { return false }
        return o == base || isVariant(o)
    }
}
