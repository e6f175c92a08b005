import DictionaryCodec

/// ETags for encoded variants: each variant of a resource gets its own validator derived from the
/// identity ETag, so caches and `If-None-Match` never confuse variants (RFC 9842 §6.2).
///
/// `"abc"` → `"abc-br"`, `"abc-dcz-<first 16 hex of the dictionary hash>"`; weak stays weak.
public enum VariantETag {
    public static func make(from etag: String, coding: ContentCoding, dictionary: DictionaryHash?) -> String {
        guard coding != .identity else { return etag }
        let weak = etag.hasPrefix("W/")
        var opaque = Substring(weak ? etag.dropFirst(2) : etag[...])
        if opaque.hasPrefix("\"") && opaque.hasSuffix("\"") && opaque.count >= 2 { opaque = opaque.dropFirst().dropLast() }
        var suffix = "-\(coding.rawValue)"
        if let dictionary { suffix += "-" + dictionary.hex.prefix(16) }
        return (weak ? "W/" : "") + "\"" + opaque + suffix + "\""
    }
}
