/// How the body of a response is delimited (RFC 9112 §6.3), as the response parser decided it.
public enum HTTPBodyLength: Sendable, Equatable {
    /// No body: a response to HEAD, a 1xx, 204 or 304 (whatever its fields say).
    case none
    /// Exactly this many bytes (`Content-Length`).
    case known(Int)
    /// Chunked transfer coding; the total is known only at the end.
    case chunked
    /// Everything until the upstream closes the connection (no framing fields, or a
    /// `Transfer-Encoding` whose final coding is not chunked). The connection cannot be reused.
    case untilClose
}
