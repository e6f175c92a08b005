import HTTPTypes

/// One request to send upstream. The client writes its own framing: any `Content-Length`,
/// `Transfer-Encoding` and `Connection` fields in `head` are replaced by what `body` needs, and
/// `Host` is added from `head.authority` (or the server) when absent.
public struct HTTPClientRequest: Sendable {
    /// Method, path (with query), authority (→ `Host`) and header fields.
    public var head: HTTPRequest {
        didSet { method = head.method }
    }
    /// `head.method`, kept with `head` (`HTTPRequest.method` makes the value anew at every read).
    public private(set) var method: HTTPRequest.Method
    public var body: HTTPClientRequestBody
    /// True when the request may be sent again on a fresh connection after a reused connection
    /// turned out dead before any response byte (RFC 9110 §9.2.2). Default: from the method (GET,
    /// HEAD, OPTIONS, TRACE, PUT, DELETE). Streamed bodies are never replayed.
    public var isIdempotent: Bool
    /// Asks the server to switch protocols (RFC 9110 §7.8): the request goes with `Connection: upgrade`
    /// and the `Upgrade` field of `head` (the caller sets it). A `101` answer ends the exchange with
    /// ``HTTPClientResponseDelegate/didSwitchProtocols(_:connection:)``: the connection leaves the pool
    /// and is handed over as a byte stream. Any other answer is an ordinary response. Default false.
    public var upgrade = false
    /// The header field lines serialised beforehand (each `name: value` CRLF, `Host` among them), sent
    /// instead of `head`'s header fields (then keep `head.headerFields` empty: the client reads
    /// fields such as `Expect` from it). Each line must be a valid field line: no CR, LF or NUL in a
    /// value, a token as name. The framing and `Connection` lines are still the client's. Nil (the
    /// default): `head`'s fields are serialised.
    public var fieldLines: [UInt8]?

    public init(head: HTTPRequest, body: HTTPClientRequestBody = .none) {
        self.head = head
        self.method = head.method
        self.body = body
        switch method {
        case .get, .head, .options, .trace, .put, .delete: isIdempotent = true
        default: isIdempotent = false
        }
    }
}

/// The body of an upstream request.
public enum HTTPClientRequestBody: Sendable {
    /// No body (no `Content-Length` either, except `Content-Length: 0` for POST, PUT and PATCH).
    case none
    /// These bytes, sent with `Content-Length`.
    case bytes([UInt8])
    /// Bytes pulled from `source` as the connection can take them: with `Content-Length: length`
    /// when known, else chunked.
    case stream(any RequestBodySource, length: Int?)
}

/// A streamed request body, pulled with back-pressure.
public protocol RequestBodySource: AnyObject, Sendable {
    /// Called on the exchange's loop queue when the connection wants more body bytes (never again
    /// before `deliver` was called). Call `deliver` exactly once, from any thread, with the next part.
    /// With a declared length, the request counts as sent once that many bytes were delivered and
    /// written; the source is then asked once more (so it reaches its end) and that answer is dropped.
    func pull(_ deliver: @escaping @Sendable (RequestBodyPart) -> Void)
}

/// One answer of a `RequestBodySource`.
public enum RequestBodyPart: Sendable {
    /// More bytes (an empty array is allowed and ignored).
    case bytes([UInt8])
    /// The body is complete.
    case end
    /// The body cannot be completed (the downstream client went away): the exchange is cancelled.
    case failed
}
