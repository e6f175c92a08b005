import DictionaryTransportFields

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

    /// Resolves a URI reference (from `Link`) against this URL: absolute `http(s)://…`, `//host/…`,
    /// `/path`, or a relative path. Nil when the result is not a valid target.
    public func resolve(_ reference: String) -> ClientRequestTarget? {
        if reference.hasPrefix("http://") || reference.hasPrefix("https://") { return ClientRequestTarget(url: reference) }
        if reference.hasPrefix("//") { return ClientRequestTarget(url: scheme + ":" + reference) }
        if reference.hasPrefix("/") { return ClientRequestTarget(url: origin + reference) }
        if reference.contains(":") && !reference.contains("/") { return nil }
        let directory = path[...path.lastIndex(of: "/")!]
        return ClientRequestTarget(url: origin + directory + reference)
    }

    public var description: String { origin + pathAndQuery }
}
