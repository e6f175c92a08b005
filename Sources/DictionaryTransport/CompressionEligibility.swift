import HTTPCore
import HTTPTypes

/// Which responses may be compressed at all, and which may be dictionary-compressed.
///
/// Pure functions over header fields, thread-safe.
public enum CompressionEligibility {
    /// Why a response must not be dictionary-compressed for privacy (RFC 9842 §9.2, CRIME/BREACH class):
    /// it mixes per-user secrets with content an attacker may influence.
    public enum PrivacyConcern: String, Sendable, Hashable {
        /// The response sets a cookie.
        case setCookie
        /// The response is `Cache-Control: private` or `no-store`.
        case privateCacheControl
        /// The request carries `Authorization` or `Cookie`.
        case credentialedRequest
    }

    /// The first privacy concern found, or nil when the exchange carries no secrets by these rules.
    /// `Cache-Control` directives are matched case-insensitively, with or without arguments
    /// (`private="Set-Cookie"` counts).
    public static func privacyConcern(request: HTTPFields, response: HTTPFields) -> PrivacyConcern? {
        if response[.setCookie] != nil { return .setCookie }
        for line in response[values: .cacheControl] {
            for directive in line.cacheControlDirectives where directive.isNamed("private") || directive.isNamed("no-store") {
                return .privateCacheControl
            }
        }
        if request[.authorization] != nil || request[.cookie] != nil { return .credentialedRequest }
        return nil
    }

    /// True when the media type is already compressed (images except SVG/BMP/ICO, audio, video,
    /// WOFF/WOFF2 fonts, zip/gzip/zstd/brotli/bzip2/xz/7z/rar archives, PDF): compressing again
    /// wastes CPU for no gain. Parameters and case are ignored; an unknown or missing type is not
    /// precompressed.
    public static func isPrecompressed(contentType: String?) -> Bool {
        guard var contentType else { return false }
        return contentType.withUTF8 { isPrecompressed(contentTypeBytes: $0) }
    }

    /// ``isPrecompressed(contentType:)`` of a field value's bytes, without making a String: an ASCII
    /// value is read byte by byte (the same members as the String rules: the first non-empty
    /// `;`-member, OWS-trimmed, lower-cased, split once at `/` with empty parts omitted); any other
    /// value goes through the String rules, whose Unicode case mapping and grapheme splitting differ.
    public static func isPrecompressed(contentTypeBytes value: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !value.contains(where: { $0 >= 0x80 }) else {
            return isPrecompressedByCharacters(String(decoding: value, as: UTF8.self))
        }
        // The essence: the first member between `;` that is not empty before trimming.
        var start = 0
        while start < value.count && value[start] == UInt8(ascii: ";") { start += 1 }
        var end = start
        while end < value.count && value[end] != UInt8(ascii: ";") { end += 1 }
        while start < end && (value[start] == 0x20 || value[start] == 0x09) { start += 1 }
        while end > start && (value[end - 1] == 0x20 || value[end - 1] == 0x09) { end -= 1 }
        // type "/" subtype: split once at a `/`, empty parts omitted (and not counted as the split).
        var i = start
        while i < end && value[i] == UInt8(ascii: "/") { i += 1 }
        let typeStart = i
        while i < end && value[i] != UInt8(ascii: "/") { i += 1 }
        guard i < end else { return false }  // one part only
        let type = UnsafeBufferPointer(rebasing: value[typeStart..<i])
        // After the one split, the rest is the subtype as it is (`/`s included); an empty rest is omitted.
        let subtypeStart = i + 1
        guard subtypeStart < end else { return false }
        let subtype = UnsafeBufferPointer(rebasing: value[subtypeStart..<end])
        return isPrecompressed(type: type, subtype: subtype)
    }

    private static func isPrecompressed(type: UnsafeBufferPointer<UInt8>, subtype: UnsafeBufferPointer<UInt8>) -> Bool {
        func any(_ candidates: [StaticString]) -> Bool { candidates.contains { asciiCaseInsensitiveEquals(subtype, $0) } }
        if asciiCaseInsensitiveEquals(type, "image") {
            return !any(["svg+xml", "bmp", "x-icon", "vnd.microsoft.icon", "x-ms-bmp"])
        }
        if asciiCaseInsensitiveEquals(type, "audio") || asciiCaseInsensitiveEquals(type, "video") { return true }
        if asciiCaseInsensitiveEquals(type, "font") { return any(["woff", "woff2"]) }
        if asciiCaseInsensitiveEquals(type, "application") {
            return any(["font-woff", "font-woff2", "x-font-woff", "zip", "gzip", "x-gzip", "zstd", "x-zstd", "x-brotli",
                        "x-bzip2", "x-xz", "x-7z-compressed", "x-rar-compressed", "vnd.rar", "pdf", "x-compress"])
        }
        return false
    }

    /// The rules on Characters (Unicode lower-casing, grapheme-aware split at `/`): for values with
    /// non-ASCII bytes, and the reference the byte path is tested against.
    static func isPrecompressedByCharacters(_ contentType: String) -> Bool {
        let essence = contentType.fieldPair(separatedBy: ";").first?.lowercased() ?? ""
        let parts = essence.split(separator: "/", maxSplits: 1)
        guard parts.count == 2 else { return false }
        // The same lists as the byte path: the lower-cased parts compared as bytes.
        var type = String(parts[0]), subtype = String(parts[1])
        return type.withUTF8 { type in subtype.withUTF8 { isPrecompressed(type: type, subtype: $0) } }
    }
}
