import Dispatch
import HTTPCore
import Synchronization

/// A request body delivered in parts as it arrives, with back-pressure: the connection reads the
/// socket only while a `read` is outstanding, so a consumer that forwards each part before asking
/// for the next (an upload streamed to an upstream) holds at most one read's worth of it
/// (`ServerConfiguration.readChunkSize`) whatever the body's size.
///
/// Opt in with `ServerConfiguration.streamsRequestBody`; then `HTTPServerRequest.bodyStream` is set
/// for requests that have a body (and `body` is empty). `Expect: 100-continue` is answered when the
/// first `read` is made, so a handler that answers without reading (an early 4xx/5xx) never invites
/// the body. A response sent before the body was read to its end closes the connection after it
/// (the rest of the body is discarded while the response is written).
///
/// Contract: call `read` again only after the previous `then` ran; `then` runs once per call, on the
/// connection's event-loop queue (`HTTPServerRequest.eventLoop.queue`), never inside `read`.
/// After `.end` or `.failed`, further reads get `.failed(.finished)`. Thread-safety: `read` may be
/// called from any thread (it hops onto the connection's queue).
public final class RequestBodyStream: Sendable {
    /// One step of the body.
    public enum Part: Sendable {
        /// The next bytes (never empty).
        case bytes([UInt8])
        /// The body is complete; trailer fields of a chunked body, in order.
        case end(trailers: [(name: String, value: String)])
        /// The body cannot be completed.
        case failed(RequestBodyError)
    }

    /// The announced length (Content-Length), or nil for a chunked body.
    public let expectedLength: Int64?
    private let loop: EventLoop
    private let requestRead: @Sendable (@escaping @Sendable (Part) -> Void) -> Void

    init(expectedLength: Int64?, loop: EventLoop, requestRead: @escaping @Sendable (@escaping @Sendable (Part) -> Void) -> Void) {
        self.expectedLength = expectedLength
        self.loop = loop
        self.requestRead = requestRead
    }

    /// Asks for the next part; see the type's contract.
    public func read(then: @escaping @Sendable (Part) -> Void) {
        let requestRead = requestRead
        loop.execute { requestRead(then) }
    }
}

/// Why a streamed request body could not be completed.
public enum RequestBodyError: Error, Equatable, Sendable {
    /// The client closed or reset the connection before the body ended.
    case connectionClosed
    /// The body's framing is invalid (bad chunk size, ...); the connection is closed.
    case invalidFraming(String)
    /// The body did not arrive within `ServerConfiguration.bodyReadTimeout`.
    case timedOut
    /// `read` after the end, or while another read was outstanding.
    case finished
}
