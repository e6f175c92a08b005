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
        guard let contentType else { return false }
        let essence = contentType.fieldPair(separatedBy: ";").first?.lowercased() ?? ""
        let parts = essence.split(separator: "/", maxSplits: 1)
        guard parts.count == 2 else { return false }
        let (type, subtype) = (parts[0], parts[1])
        switch type {
        case "image": return !["svg+xml", "bmp", "x-icon", "vnd.microsoft.icon", "x-ms-bmp"].contains(subtype)
        case "audio", "video": return true
        case "font": return subtype == "woff" || subtype == "woff2"
        case "application":
            return [
                "font-woff", "font-woff2", "x-font-woff", "zip", "gzip", "x-gzip", "zstd", "x-zstd", "x-brotli",
                "x-bzip2", "x-xz", "x-7z-compressed", "x-rar-compressed", "vnd.rar", "pdf", "x-compress",
            ].contains(subtype)
        default: return false
        }
    }
}
