import HTTPServer
import HTTPTypes
#if canImport(Glibc)
import Glibc
#endif

/// Guards the admin listener against DNS rebinding: a web page whose own name an attacker makes
/// resolve to the admin address would otherwise let the visitor's browser read the metrics and the
/// live view for it. A request is answered only when its `Host` (any port, or none at all) is
///
/// - `localhost` or a name under `.localhost` (browsers resolve those to loopback themselves);
/// - an IP address (`127.0.0.1`, `[::1]`, the listener's own address: an address cannot be rebound);
/// - one of `allowedHosts` (compared case-insensitively; `*` lets every name in).
///
/// Any other `Host` gets `421 Misdirected Request` naming the setting. Stateless; thread-safe.
public struct AdminHostCheck: HTTPMiddleware {
    /// Lower-case names allowed besides loopback names and addresses.
    public let allowedHosts: Set<String>

    public init(allowedHosts: [String]) {
        self.allowedHosts = Set(allowedHosts.map { Self.normalized($0) })
    }

    public func handle(_ request: HTTPServerRequest, next: any HTTPHandler,
                       respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        guard let authority = request.head.authority, !Self.accepts(authority, allowed: allowedHosts) else {
            return next.handle(request, respond: respond)
        }
        respond(.text(
            .init(code: 421, reasonPhrase: "Misdirected Request"),
            "421 Misdirected Request: the admin listener answers Host localhost, an IP address or a name in admin.allowedHosts (DCSERVE_ADMIN_ALLOWED_HOSTS), not \(authority.prefix(200).debugDescription)",
            headerFields: [.cacheControl: "no-store"]))
    }

    /// Whether a `Host` value is one the admin listener answers.
    static func accepts(_ authority: String, allowed: Set<String>) -> Bool {
        guard let host = hostPart(authority) else { return false }
        if isIPAddress(host) { return true }
        let name = normalized(host)
        if name == "localhost" || name.hasSuffix(".localhost") { return true }
        return allowed.contains("*") || allowed.contains(name)
    }

    /// The host of a `Host` value without its port; nil when malformed.
    static func hostPart(_ authority: String) -> String? {
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            let rest = authority[authority.index(after: close)...]
            guard rest.isEmpty || (rest.first == ":" && rest.dropFirst().allSatisfy(\.isASCIIDigit)) else { return nil }
            return String(authority[...close])
        }
        let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2, !parts[0].isEmpty else { return nil }
        if parts.count == 2, !parts[1].allSatisfy(\.isASCIIDigit) { return nil }
        return String(parts[0])
    }

    /// An IPv4 literal, or an IPv6 literal in brackets.
    static func isIPAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        if host.hasPrefix("["), host.hasSuffix("]") { return inet_pton(AF_INET6, String(host.dropFirst().dropLast()), &v6) == 1 }
        return inet_pton(AF_INET, host, &v4) == 1
    }

    static func normalized(_ name: String) -> String {
        let lower = name.lowercased()
        return lower.hasSuffix(".") && lower.count > 1 ? String(lower.dropLast()) : lower
    }
}

private extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
