import DictionaryCodec
import HTTPCore
import HTTPTypes

/// One user's dictionary partition: HMAC-SHA256(secret, source ‖ credential) in hex, so the credential
/// (a bearer token, a session cookie, an upstream user id) is never stored or logged, and ids cannot
/// be forged or reversed without the server secret. The source (`header:<lower-case name>`,
/// `cookie:<name>`, `upstream-header:<lower-case name>`, then a line feed) is part of the message: a
/// value a client sends in a header never names the partition the upstream gave that value to (an
/// upstream user id is no secret), nor a cookie's.
///
/// Requests without the configured header/cookie (or with an empty value) share the anonymous partition ``anonymous``
/// (quick mode's `--partition-header`); a value type, `Sendable`.
public struct PartitionID: Hashable, Sendable, CustomStringConvertible {
    public let value: String

    public static let anonymous = PartitionID(value: "anonymous")

    init(value: String) { self.value = value }

    /// The partition of `credential` taken from `source`, under `secret`.
    public init(secret: [UInt8], source: DictionaryPartitionSource, credential: some StringProtocol) {
        value = Self.hmacSHA256(key: secret, message: Self.domain(of: source) + Array(credential.utf8)).hex
    }

    /// The bytes naming where a credential came from, before it in the HMAC's message. Header names
    /// are case-insensitive (lower-cased), cookie names are not; a line feed never occurs in either.
    static func domain(of source: DictionaryPartitionSource) -> [UInt8] {
        switch source {
        case .header(let name): Array("header:\(name.lowercased())\n".utf8)
        case .cookie(let name): Array("cookie:\(name)\n".utf8)
        case .upstreamHeader(let name): Array("upstream-header:\(name.lowercased())\n".utf8)
        }
    }

    public var description: String { value }

    /// RFC 2104 HMAC with SHA-256 (block size 64).
    static func hmacSHA256(key: [UInt8], message: [UInt8]) -> DictionaryHash {
        var k = key.count > 64 ? SHA256.hash(key).bytes : key
        k += [UInt8](repeating: 0, count: 64 - k.count)
        let inner = SHA256.hash(k.map { $0 ^ 0x36 } + message)
        return SHA256.hash(k.map { $0 ^ 0x5c } + inner.bytes)
    }

    /// Where a request stands under `source` (nil for `upstreamHeader`: that comes from the response,
    /// see ``fromResponse(_:source:secret:)``). A key field present on more than one line, or a key
    /// cookie present more than once, is ``RequestPartition/ambiguous``: back ends differ on which
    /// value they authenticate (first or last), so dcserve uses none.
    static func fromRequest(_ fields: HTTPFields, source: DictionaryPartitionSource, secret: [UInt8]) -> RequestPartition? {
        switch source {
        case .header(let name):
            guard let field = HTTPField.Name(name) else { return .anonymous }
            let lines = fields[values: field]
            guard lines.count <= 1 else { return .ambiguous }
            guard let value = lines.first, !value.isEmpty else { return .anonymous }
            return .user(PartitionID(secret: secret, source: source, credential: value))
        case .cookie(let name):
            let values = cookies(named: name, in: fields[values: .cookie])
            guard values.count <= 1 else { return .ambiguous }
            // An empty value (`session=` or `session=""`, e.g. after a logout) names nobody: anonymous,
            // never one partition shared by every client that sends it.
            guard let value = values.first, !value.isEmpty, value != "\"\"" else { return .anonymous }
            return .user(PartitionID(secret: secret, source: source, credential: value))
        case .upstreamHeader:
            return nil
        }
    }

    /// For `upstreamHeader`: the partition the upstream named on its response (anonymous when it named
    /// none, ambiguous when it named it on several lines); the field is removed from `fields` so the
    /// client never sees it.
    static func fromResponse(_ fields: inout HTTPFields, source: DictionaryPartitionSource, secret: [UInt8]) -> RequestPartition? {
        guard case .upstreamHeader(let name) = source, let field = HTTPField.Name(name) else { return nil }
        let lines = fields[values: field]
        fields[field] = nil
        guard lines.count <= 1 else { return .ambiguous }
        guard let value = lines.first, !value.isEmpty else { return .anonymous }
        return .user(PartitionID(secret: secret, source: source, credential: value))
    }

    /// The first value of cookie `name` in the request's `Cookie` fields, or nil.
    static func cookie(named name: String, in values: [String]) -> String? {
        cookies(named: name, in: values).first
    }

    /// Every value of cookie `name` in the request's `Cookie` fields (RFC 6265 §5.4 syntax), in order,
    /// split at `;` and `=` bytes (`;\u{0301}` is one Character to `String.split`); leading spaces dropped.
    static func cookies(named name: String, in values: [String]) -> [String] {
        var found: [String] = []
        for value in values {
            for pair in value.fieldMembers(separatedBy: ";", trimmingOWS: false) {
                let trimmed = Substring(pair.utf8.drop { $0 == 0x20 })
                let (cookieName, cookieValue) = trimmed.fieldPair(separatedBy: "=", omittingEmpty: false, trimmingOWS: false)
                if let cookieName, let cookieValue, cookieName == name { found.append(String(cookieValue)) }
            }
        }
        return found
    }

    /// Whether the `Cookie` fields hold a cookie other than `name` (nil: any cookie counts).
    static func hasCookie(otherThan name: String?, in values: [String]) -> Bool {
        for value in values {
            for pair in value.fieldMembers(separatedBy: ";", trimmingOWS: false) {
                let trimmed = Substring(pair.utf8.drop { $0 == 0x20 })
                if trimmed.isEmpty { continue }
                let cookieName = trimmed.fieldPair(separatedBy: "=", omittingEmpty: false, trimmingOWS: false).first
                if name == nil || cookieName.map(String.init) != name { return true }
            }
        }
        return false
    }
}
