/// Why a request could not be parsed, with the status code the server answers it with.
///
/// Every parse error ends the connection: the server writes one short error response with
/// `Connection: close` and closes, because after a framing error the byte stream cannot be trusted
/// (request smuggling defence).
public struct HTTPParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Status code of the error response (400, 413, 414, 417, 431, 501 or 505).
    public let status: Int
    /// A short human-readable reason, sent as the response body.
    public let reason: String

    public init(status: Int, reason: String) {
        self.status = status
        self.reason = reason
    }

    public var description: String { "\(status) \(reason)" }

    static func badRequest(_ reason: String) -> HTTPParseError { HTTPParseError(status: 400, reason: reason) }
    static let uriTooLong = HTTPParseError(status: 414, reason: "request line too long")
    static func headersTooLarge(_ reason: String) -> HTTPParseError { HTTPParseError(status: 431, reason: reason) }
    static let contentTooLarge = HTTPParseError(status: 413, reason: "request body too large")
    static let versionNotSupported = HTTPParseError(status: 505, reason: "HTTP version not supported")
    static func notImplemented(_ reason: String) -> HTTPParseError { HTTPParseError(status: 501, reason: reason) }
    static let expectationFailed = HTTPParseError(status: 417, reason: "unsupported expectation")
}
