import DictionaryCodec

/// ETags for encoded variants: each variant of a resource gets its own validator derived from the
/// identity ETag, so caches and `If-None-Match` never confuse variants (RFC 9842 §6.2).
///
/// `"abc"` → `"abc-br5"`, `"abc-dcz19-<first 16 hex of the dictionary hash>"`; weak stays weak. The
/// level is part of the tag because a background re-encode at a better level changes the bytes, and
/// a strong validator must change with them.
public enum VariantETag {
    public static func make(from etag: String, coding: ContentCoding, level: Int, dictionary: DictionaryHash?) -> String {
        guard coding != .identity else { return etag }
        let weak = etag.hasPrefix("W/")
        var opaque = Substring(weak ? etag.dropFirst(2) : etag[...])
        if opaque.hasPrefix("\"") && opaque.hasSuffix("\"") && opaque.count >= 2 { opaque = opaque.dropFirst().dropLast() }
        var suffix = "-\(coding.rawValue)\(level)"
        if let dictionary { suffix += "-" + dictionary.hex.prefix(16) }
        return (weak ? "W/" : "") + "\"" + opaque + suffix + "\""
    }
}
