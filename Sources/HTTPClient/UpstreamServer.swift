/// One upstream server: where to connect and whether to speak TLS. A plain value.
public struct UpstreamServer: Sendable, Hashable, CustomStringConvertible {
    /// A DNS name or an IPv4/IPv6 literal (IPv6 with or without brackets).
    public var host: String
    public var port: Int
    public var tls: Bool

    public init(host: String, port: Int, tls: Bool = false) {
        self.host = host
        self.port = port
        self.tls = tls
    }

    /// Parses `http://HOST[:PORT]` or `https://HOST[:PORT]` (no path); nil otherwise.
    public init?(url: String) {
        let tls: Bool
        var rest: Substring
        if url.lowercased().hasPrefix("http://") { tls = false; rest = url.dropFirst(7) }
        else if url.lowercased().hasPrefix("https://") { tls = true; rest = url.dropFirst(8) }
        else { return nil }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.isEmpty, !rest.contains("/"), !rest.contains("@") else { return nil }
        var host = rest
        var port = tls ? 443 : 80
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            host = rest[...close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let p = Int(after.dropFirst()) else { return nil }
                port = p
            }
        } else if let colon = rest.lastIndex(of: ":") {
            guard let p = Int(rest[rest.index(after: colon)...]) else { return nil }
            host = rest[..<colon]
            port = p
        }
        guard !host.isEmpty, (1...65535).contains(port) else { return nil }
        self.init(host: String(host), port: port, tls: tls)
    }

    /// The `Host` field value for a request to this server: host, plus the port when not the
    /// scheme's default.
    public var authority: String {
        let defaultPort = tls ? 443 : 80
        let h = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return port == defaultPort ? h : "\(h):\(port)"
    }

    public var description: String { "\(tls ? "https" : "http")://\(authority)" }
}
