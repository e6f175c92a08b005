/// One upstream server as configured: `http://HOST[:PORT]` or `https://HOST[:PORT]` (default ports
/// 80 and 443; an IPv6 literal in brackets; an optional trailing `/`, no other path, query,
/// fragment or user info). Parsing is strict so a typo fails at start-up, not on the first request.
public struct UpstreamServerURL: Sendable, Hashable, CustomStringConvertible {
    public var tls: Bool
    /// Host name or IP literal (IPv6 without brackets).
    public var host: String
    public var port: Int

    public init(tls: Bool, host: String, port: Int) {
        self.tls = tls
        self.host = host
        self.port = port
    }

    /// Throws a reason (`UpstreamServerURL.ParseError`) when `text` is not such a URL.
    public init(parsing text: String) throws {
        var rest = Substring(text)
        if rest.lowercased().hasPrefix("http://") {
            tls = false
            rest = rest.dropFirst(7)
        } else if rest.lowercased().hasPrefix("https://") {
            tls = true
            rest = rest.dropFirst(8)
        } else {
            throw ParseError("\"\(text)\": must start with http:// or https://")
        }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains(where: { "/?#@ \t".contains($0) }) else {
            throw ParseError("\"\(text)\": only scheme://host[:port] (no path, query, user info or spaces)")
        }
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw ParseError("\"\(text)\": unclosed [ in the host") }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw ParseError("\"\(text)\": expected :port after ]") }
                portText = after.dropFirst()
            }
            guard host.contains(":"), host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw ParseError("\"\(text)\": brackets hold an IPv6 address")
            }
        } else {
            let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { throw ParseError("\"\(text)\": an IPv6 host goes in brackets") }
            host = String(parts[0])
            portText = parts.count == 2 ? parts[1] : nil
            guard host.utf8.allSatisfy({ $0 < 0x80 && ($0 == 0x2d || $0 == 0x2e || $0 == 0x5f || (0x30...0x39).contains($0)
                                                       || (0x41...0x5a).contains($0) || (0x61...0x7a).contains($0)) }) else {
                throw ParseError("\"\(text)\": the host may hold letters, digits, '-', '.' and '_' only")
            }
        }
        guard !host.isEmpty else { throw ParseError("\"\(text)\": no host") }
        if let portText {
            guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy(\.isASCII), portText.allSatisfy(\.isNumber),
                  let port = Int(portText), (1...65_535).contains(port) else {
                throw ParseError("\"\(text)\": the port must be 1…65535")
            }
            self.port = port
        } else {
            port = tls ? 443 : 80
        }
    }

    /// `host:port` as a `Host` field value (IPv6 in brackets; the default port omitted).
    public var authority: String {
        let h = host.contains(":") ? "[\(host)]" : host
        return port == (tls ? 443 : 80) ? h : "\(h):\(port)"
    }

    public var description: String { "\(tls ? "https" : "http")://\(authority)" }

    public struct ParseError: Error, CustomStringConvertible, Equatable {
        public let description: String
        init(_ description: String) { self.description = description }
    }
}
