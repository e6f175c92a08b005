#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPCore
import HTTPTypes

/// The addresses of TLS-terminating proxies whose `Forwarded: proto=` / `X-Forwarded-Proto` fields
/// are believed. A request from any other address keeps the scheme of its own connection, whatever
/// those fields say (anyone can send them).
///
/// Addresses are IP literals compared as binary addresses (so `::ffff:10.0.0.1` equals `10.0.0.1`,
/// and `::1` equals `0:0:0:0:0:0:0:1`). Value type, `Sendable`.
public struct TrustedProxies: Sendable, Equatable {
    private let addresses: Set<[UInt8]>

    /// No trusted proxies: forwarded fields are always ignored.
    public init() { addresses = [] }

    /// Throws `TrustedProxies.InvalidAddress` for an entry that is not an IPv4 or IPv6 literal.
    public init(_ literals: [String]) throws {
        var set = Set<[UInt8]>()
        for literal in literals {
            guard let bytes = TrustedProxies.parse(literal) else { throw InvalidAddress(literal: literal) }
            set.insert(bytes)
        }
        addresses = set
    }

    public struct InvalidAddress: Error, CustomStringConvertible {
        public let literal: String
        public var description: String { "\"\(literal)\" is not an IPv4 or IPv6 address" }
    }

    public var isEmpty: Bool { addresses.isEmpty }

    /// True when `remoteAddress` ("1.2.3.4:port", "[::1]:port" or a bare literal) is a trusted proxy.
    public func trusts(remoteAddress: String) -> Bool {
        guard !addresses.isEmpty,
              let bytes = TrustedProxies.parse(HTTPServerRequest.host(ofPeerAddress: remoteAddress)) else { return false }
        return addresses.contains(bytes)
    }

    /// The scheme a trusted proxy reports: the last `proto=` of `Forwarded` (the element the nearest
    /// proxy appended), else the last `X-Forwarded-Proto` value; only "http" or "https" count. Split
    /// at `,`, `;` and `=` bytes (a separator followed by a combining mark is one Character).
    public static func forwardedScheme(_ fields: HTTPFields) -> String? {
        if let forwarded = fields[values: forwardedName].last {
            let element = forwarded.fieldMembers(separatedBy: ",", trimmingOWS: false).last ?? ""
            for pair in element.fieldMembers(separatedBy: ";", trimmingOWS: false) {
                let parts = pair.fieldPair(separatedBy: "=")
                guard let name = parts.first, var value = parts.second, name.lowercased() == "proto" else { continue }
                if value.hasPrefix("\"") && value.hasSuffix("\"") && value.count >= 2 { value = value.dropFirst().dropLast() }
                if let scheme = normalized(value) { return scheme }
            }
        }
        if let proto = fields[values: xForwardedProtoName].last {
            return normalized(proto.fieldMembers(separatedBy: ",").last ?? "")
        }
        return nil
    }

    /// The scheme a request is treated as having: the connection's own, or what a trusted proxy says.
    func scheme(secureConnection: Bool, remoteAddress: String, fields: HTTPFields) -> String {
        let own = secureConnection ? "https" : "http"
        guard !addresses.isEmpty, trusts(remoteAddress: remoteAddress) else { return own }
        return TrustedProxies.forwardedScheme(fields) ?? own
    }

    private static func normalized(_ value: Substring) -> String? {
        switch value.lowercased() {
        case "https": return "https"
        case "http": return "http"
        default: return nil
        }
    }

    /// True when `literal` is an IPv4 or IPv6 address literal (what `init` accepts).
    public static func isAddressLiteral(_ literal: String) -> Bool { parse(literal) != nil }

    /// 4 bytes for IPv4 (and IPv4-mapped IPv6), 16 for IPv6; nil if not a literal.
    static func parse(_ literal: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, literal, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, literal, &v6) == 1 {
            let bytes = withUnsafeBytes(of: &v6) { Array($0) }
            if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff { return Array(bytes[12...]) }
            return bytes
        }
        return nil
    }
}

private let forwardedName = HTTPField.Name("forwarded")!
private let xForwardedProtoName = HTTPField.Name("x-forwarded-proto")!
