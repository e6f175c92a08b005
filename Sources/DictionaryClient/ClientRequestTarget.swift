import DictionaryTransportFields
import Foundation

/// An absolute request URL as the dictionary client sees it: origin (scheme, host, port) and the
/// percent-encoded path with query. A value type, thread-safe.
///
/// Accepts `http://` and `https://` URLs of the form `scheme://host[:port][/path][?query]` (any
/// `#fragment` is dropped); user info and other schemes are refused (`init` returns nil).
public struct ClientRequestTarget: Hashable, Sendable, CustomStringConvertible {
    /// `http` or `https`.
    public let scheme: String
    /// Lower-case host; IPv6 literals keep their brackets.
    public let host: String
    /// Explicit port, nil for the scheme's default.
    public let port: Int?
    /// Path and query, starting with `/` (the request target of an HTTP/1.1 request line).
    public let pathAndQuery: String

    public init?(url: String) {
        guard let base = URLPatternBase(url: url), base.scheme == "http" || base.scheme == "https" else { return nil }
        guard let schemeEnd = url.range(of: "://") else { return nil }
        var rest = url[schemeEnd.upperBound...]
        rest = rest.drop { $0 != "/" && $0 != "?" && $0 != "#" }
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        var target = String(rest)
        if target.isEmpty || target.hasPrefix("?") { target = "/" + target }
        guard target.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        scheme = base.scheme
        host = base.host
        port = base.port
        pathAndQuery = target
    }

    /// The path without the query.
    public var path: String { String(pathAndQuery.prefix { $0 != "?" }) }

    /// `scheme://host[:port]`, the key dictionaries are kept under (same-origin rule, RFC 9842 §2.2.3).
    public var origin: String { "\(scheme)://\(host)" + (port.map { ":\($0)" } ?? "") }

    /// The port to connect to.
    public var effectivePort: Int { port ?? (scheme == "https" ? 443 : 80) }

    /// The `Host` field value.
    public var authority: String { host + (port.map { ":\($0)" } ?? "") }

    /// The dictionary's URL as a pattern base (resolves relative `match` patterns, checks origin).
    public var patternBase: URLPatternBase { URLPatternBase(scheme: scheme, host: host, port: port, path: path) }

    /// RFC 9842 §8 / Chromium: dictionaries are used only in secure contexts — HTTPS, or plain HTTP to
    /// a loopback host (`localhost`, `*.localhost`, `127.0.0.0/8`, `[::1]`).
    public var isSecureContext: Bool {
        if scheme == "https" { return true }
        if host == "localhost" || host.hasSuffix(".localhost") || host == "[::1]" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }

    /// Resolves a URI reference (from `Link`) against this URL (RFC 3986 §5.2): absolute
    /// `http(s)://…`, `//host/…`, `/path`, `?query` or a relative path, with the dot segments of the
    /// result's path removed (§5.2.4; `%2E` counts as a dot, as browsers read it). Nil when the result
    /// is not a valid target.
    public func resolve(_ reference: String) -> ClientRequestTarget? {
        let reference = String(reference.prefix { $0 != "#" })
        let absolute: String
        if reference.hasPrefix("http://") || reference.hasPrefix("https://") {
            absolute = reference
        } else if reference.hasPrefix("//") {
            absolute = scheme + ":" + reference
        } else if reference.hasPrefix("/") {
            absolute = origin + reference
        } else if reference.isEmpty {
            absolute = description
        } else if reference.hasPrefix("?") {
            absolute = origin + path + reference
        } else {
            if let colon = reference.firstIndex(of: ":"), !reference[..<colon].contains("/") { return nil }  // another scheme
            absolute = origin + path[...path.lastIndex(of: "/")!] + reference
        }
        guard let parsed = ClientRequestTarget(url: absolute) else { return nil }
        let query = parsed.pathAndQuery.drop { $0 != "?" }
        return ClientRequestTarget(url: parsed.origin + Self.removingDotSegments(parsed.path) + query)
    }

    /// RFC 3986 §5.2.4 `remove_dot_segments` for an absolute path: `.` and `..` segments (also
    /// written `%2E`, `%2e.`, …) are removed, `..` taking the segment before it; the result starts with `/`.
    public static func removingDotSegments(_ path: String) -> String {
        func dots(_ segment: Substring) -> Int? {
            let s = segment.replacingOccurrences(of: "%2e", with: ".", options: .caseInsensitive)
            return s == "." ? 1 : s == ".." ? 2 : nil
        }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        var out: [Substring] = []
        for (i, segment) in segments.enumerated() {
            let last = i == segments.count - 1
            switch dots(segment) {
            case 1?:
                if last { out.append("") }  // "/a/." → "/a/"
            case 2?:
                if !out.isEmpty { out.removeLast() }
                if last { out.append("") }
            default:
                out.append(segment)
            }
        }
        return "/" + out.joined(separator: "/")
    }

    public var description: String { origin + pathAndQuery }
}
