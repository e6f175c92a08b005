/// Size limits the upstream response parser enforces. Exceeding one throws
/// `ResponseParseError` of kind `.tooLarge`; the exchange fails and the connection is closed.
public struct ResponseParserLimits: Sendable, Equatable {
    /// Longest status line in bytes, without CRLF.
    public var maxStatusLineBytes: Int = 8 * 1024
    /// Largest header section in bytes, status line included; also bounds a trailer section.
    public var maxHeaderBytes: Int = 64 * 1024
    /// Most header fields in one response head; also bounds the trailer fields.
    public var maxHeaderCount: Int = 100
    /// Longest chunk-size line, extensions included.
    public var maxChunkLineBytes: Int = 1024
    /// Most interim (1xx) responses accepted before the final response of one exchange.
    public var maxInformationalResponses: Int = 16

    public init() {}
}
