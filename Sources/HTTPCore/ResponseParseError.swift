/// Why an upstream response could not be parsed. After any of these the byte stream cannot be
/// trusted (response splitting / smuggling defence): the exchange fails and the connection is closed,
/// never pooled.
public struct ResponseParseError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The bytes break HTTP/1.1 syntax or framing rules (RFC 9112).
        case malformed
        /// A limit of `ResponseParserLimits` was exceeded, or a size does not fit in an `Int`.
        case tooLarge
        /// Valid HTTP this client does not handle (another major version, `101 Switching Protocols`).
        case unsupported
        /// The input ended before the response was complete (and the framing is not close-delimited).
        case truncated
    }

    public let kind: Kind
    /// A short human-readable reason (for logs and 502 bodies).
    public let reason: String

    public init(kind: Kind, reason: String) {
        self.kind = kind
        self.reason = reason
    }

    public var description: String { "\(kind): \(reason)" }

    static func malformed(_ reason: String) -> ResponseParseError { ResponseParseError(kind: .malformed, reason: reason) }
    static func tooLarge(_ reason: String) -> ResponseParseError { ResponseParseError(kind: .tooLarge, reason: reason) }
    static func unsupported(_ reason: String) -> ResponseParseError { ResponseParseError(kind: .unsupported, reason: reason) }
    static func truncated(_ reason: String) -> ResponseParseError { ResponseParseError(kind: .truncated, reason: reason) }
}
