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
        if let dictionary { suffix += "-" + dictionary.hex.prefix(16) }
        return "W/\"" + opaque + suffix + "\""
    }
}

extension VariantETag {
    /// Whether `tag` names the resource state whose identity ETag is `identity`: the identity ETag
    /// itself, or a variant ETag made from it (``make(from:coding:level:dictionary:)``: the opaque
    /// part followed by `-` and a coding's name). A variant's ETag names one encoding of the identity
    /// representation; both say the resource has not changed since the client saw it. Used for
    /// `If-Match` (RFC 9110 §13.1.1), which compares strongly: a weak `tag` or `identity` never matches.
    public static func namesState(_ tag: Substring, identity: String) -> Bool {
        guard !identity.hasPrefix("W/"), tag.hasPrefix("\""), tag.hasSuffix("\""), tag.count >= 2,
              identity.hasPrefix("\""), identity.hasSuffix("\""), identity.count >= 2 else { return false }
        let opaque = tag.dropFirst().dropLast(), base = identity.dropFirst().dropLast()
        if opaque == base { return true }
        guard opaque.hasPrefix(base), opaque.dropFirst(base.count).first == "-" else { return false }
        let suffix = opaque.dropFirst(base.count + 1)
        return ContentCoding.allCases.contains { $0 != .identity && suffix.hasPrefix($0.rawValue) }
    }
}
