/// The dictionary's own URL, against which a `match` pattern is resolved (RFC 9842 §2.1.1): its origin
/// decides which absolute patterns are same-origin, its path resolves relative patterns.
public struct URLPatternBase: Hashable, Sendable {
    /// Lower-case scheme, e.g. `https`.
    public let scheme: String
    /// Lower-case host (IPv6 literals keep their brackets).
    public let host: String
    /// Port, nil for the scheme's default.
    public let port: Int?
    /// Percent-encoded path of the dictionary resource, starting with `/`.
    public let path: String

    /// - Parameter port: nil or the scheme's default port mean the same origin.
    public init(scheme: String, host: String, port: Int? = nil, path: String) {
        self.scheme = scheme.lowercased()
        self.host = host.lowercased()
        let defaultPort = URLPatternBase.defaultPort(self.scheme)
        self.port = (port == defaultPort) ? nil : port
        self.path = path.utf8.starts(with: "/".utf8) ? path : "/" + path
    }

    /// Parses `scheme://host[:port][/path][?query][#fragment]`; nil when it is not of that shape.
    public init?(url: String) {
        guard let (scheme, host, port, rest) = URLPatternBase.splitAbsolute(url), let host else { return nil }
        var path = rest
        if let cut = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = String(path[..<cut]) }
        self.init(scheme: scheme, host: host, port: port, path: path.isEmpty ? "/" : path)
    }

    static func defaultPort(_ scheme: String) -> Int? {
        switch scheme {
        case "http", "ws": 80
        case "https", "wss": 443
        default: nil
        }
    }

    /// Splits an absolute URL string into (scheme, host, port, rest-from-path). Returns nil when the
    /// string has no `scheme://`. `host` is nil when the authority is not a plain host[:port]
    /// (user info, pattern syntax, bad port). A `port` equal to the default is kept as given.
    static func splitAbsolute(_ s: String) -> (scheme: String, host: String?, port: Int?, rest: String)? {
        let u = Array(s.utf8)
        guard let first = u.first, isAlpha(first) else { return nil }
        var i = 1
        while i < u.count, isAlpha(u[i]) || isDigit(u[i]) || u[i] == UInt8(ascii: "+") || u[i] == UInt8(ascii: "-") || u[i] == UInt8(ascii: ".") { i += 1 }
        guard i + 2 < u.count, u[i] == UInt8(ascii: ":"), u[i + 1] == UInt8(ascii: "/"), u[i + 2] == UInt8(ascii: "/") else {
            return nil
        }
        let scheme = String(decoding: u[0..<i], as: UTF8.self).lowercased()
        var j = i + 3
        let authorityStart = j
        while j < u.count, u[j] != UInt8(ascii: "/"), u[j] != UInt8(ascii: "?"), u[j] != UInt8(ascii: "#") { j += 1 }
        let authority = String(decoding: u[authorityStart..<j], as: UTF8.self)
        let rest = String(decoding: u[j...], as: UTF8.self)
        let hostPort = parseHostPort(authority)
        return (scheme, hostPort?.0, hostPort?.1, rest)
    }

    private static func parseHostPort(_ authority: String) -> (String, Int?)? {
        guard !authority.isEmpty, !authority.contains("@") else { return nil }
        var host = Substring(authority)
        var port: Int?
        if host.utf8.starts(with: "[".utf8) {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let after = host[host.index(after: close)...]
            host = host[...close]
            if !after.isEmpty {
                guard after.utf8.starts(with: ":".utf8), let p = Int(String(after.unicodeScalars.dropFirst())), (0...65535).contains(p) else { return nil }
                port = p
            }
        } else if let colon = host.lastIndex(of: ":") {
            let digits = host[host.index(after: colon)...]
            host = host[..<colon]
            // Outside brackets a host has no ':' ("a:80p:" is not host "a:80p" with an empty port:
            // its origin would print as a URL that does not parse again).
            guard !host.contains(":") else { return nil }
            if !digits.isEmpty {
                guard digits.allSatisfy(\.isASCII), let p = Int(digits), (0...65535).contains(p) else { return nil }
                port = p
            }
        }
        let allowed: (Character) -> Bool = { c in
            c.isASCII && (c.isLetter || c.isNumber || c == "-" || c == "." || c == "_" || c == "[" || c == "]" || c == ":" || c == "%")
        }
        guard !host.isEmpty, host.allSatisfy(allowed) else { return nil }
        return (host.lowercased(), port)
    }

    private static func isAlpha(_ c: UInt8) -> Bool { (c | 0x20) >= UInt8(ascii: "a") && (c | 0x20) <= UInt8(ascii: "z") }
    private static func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }
}
