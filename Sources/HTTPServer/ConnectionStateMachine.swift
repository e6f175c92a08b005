import HTTPCore

/// The decisions of one server connection, apart from its sockets and buffers: when to parse, whether
/// a response keeps the connection open and how its body is framed, when reading pauses for output,
/// what a passed deadline means, and how the connection ends (at once, or half-closed and drained
/// first). `Connection` feeds it events and performs the actions it returns.
///
/// Pure value type: no I/O, no clock, no references; unit-testable without sockets. Owned by one
/// `Connection` and used on its queue only.
struct ConnectionStateMachine {
    enum Phase: Equatable {
        /// Waiting for, or parsing, the next request.
        case reading
        /// A request is with the handler; later pipelined input waits in the buffer (responses go
        /// out in request order).
        case handling
        /// The response head is queued; its body (a large file, a stream) is still being sent.
        case sendingBody
        /// The last response is queued: write everything, then close (or linger).
        case closing
        /// Everything is written and the sending side shut (FIN sent); unread input is read and
        /// discarded until the client closes or a bound is reached (RFC 9112 §9.6), so the kernel
        /// does not answer it with a reset that would destroy responses the client has not read yet.
        case lingering
        case closed
    }

    /// What kind of deadline runs (see `ServerConfiguration` for the durations).
    enum DeadlineKind: Equatable { case none, idle, header, body, write, handshake, linger }

    /// How a response goes on the wire.
    struct ResponsePlan: Equatable {
        var framing: BodyFraming
        /// False: the response carries `Connection: close` and the connection ends after it.
        var keepAlive: Bool
        /// False for HEAD and for statuses that forbid a body (1xx, 204, 304).
        var sendsBody: Bool
    }

    /// What the connection must do after an event.
    enum Action: Equatable {
        case none
        /// Parse buffered input and dispatch the next request (reading may resume).
        case parseNext
        /// Write what is queued; then the connection ends (see `outputWritten`).
        case finishAndClose
        /// Queue an error response with this status (`Connection: close`), then finish and close,
        /// lingering over the unread input.
        case respondWithErrorAndClose(status: Int)
        /// Shut the sending side (FIN) and start discarding input until EOF or the linger bounds.
        case halfCloseAndLinger
        /// Close the socket now.
        case close
    }

    private(set) var phase = Phase.reading
    private(set) var requestsServed = 0
    /// Whether the current request's response may keep the connection open.
    private(set) var keepAlive = true
    private(set) var isHead = false
    private(set) var version = HTTPVersion.http1_1
    /// The client closed its sending side (read returned end of stream).
    private(set) var peerClosedInput = false
    private(set) var shuttingDown = false
    /// Output reached the high watermark: no parsing or reading until it drains.
    private(set) var pausedForOutput = false
    /// The connection ends with input it has not read (an error answered mid-stream): linger.
    private(set) var lingerOnClose = false
    /// A streamed request body is in progress (from its head's dispatch to its end or failure).
    private(set) var streamingRequestBody = false
    /// The handler asked for the next part of the streamed body (reading is allowed until it gets it).
    private(set) var bodyWanted = false
    let maxRequestsPerConnection: Int

    init(maxRequestsPerConnection: Int) {
        self.maxRequestsPerConnection = maxRequestsPerConnection
    }

    /// May buffered input be parsed into the next request now?
    var mayParse: Bool { (phase == .reading && !pausedForOutput) || readingStreamedBody }

    /// The handler is waiting for the next part of its streamed request body.
    var readingStreamedBody: Bool { streamingRequestBody && bodyWanted && (phase == .handling || phase == .sendingBody) }

    /// Should the connection read from its socket now? (Reading while a request is handled would
    /// only fill the buffer; reading while output is backed up would let a client that does not
    /// read grow it without bound.)
    var mayRead: Bool {
        !peerClosedInput && ((phase == .reading && !pausedForOutput) || discardsInput || readingStreamedBody)
    }

    /// Is what is read now thrown away? While lingering, and already while the responses before an
    /// error are still being written: a client that sends a large body before it reads would
    /// otherwise block on its send while we block on ours.
    var discardsInput: Bool { phase == .lingering || (phase == .closing && lingerOnClose) }

    // MARK: Requests and responses

    /// A complete request was parsed; it goes to the handler. `keepAlive`: what the request asks
    /// for (HTTP/1.1 without `close`, HTTP/1.0 with `keep-alive`).
    mutating func requestParsed(keepAlive requested: Bool, version: HTTPVersion, isHead: Bool) {
        precondition(phase == .reading, "request parsed while \(phase)")
        requestsServed += 1
        phase = .handling
        keepAlive = requested && requestsServed < maxRequestsPerConnection && !shuttingDown
        self.version = version
        self.isHead = isHead
    }

    /// The handler answered with `status`; `knownLength` is the body's length when known (nil for
    /// a stream). Nil when no answer is expected now (closed meanwhile, or a second `respond`).
    /// `headLengthUnannounced`: an answer to HEAD announcing no length (`HeadResponseLength.unannounced`):
    /// no framing field at all, the connection kept as usual.
    mutating func responseReady(status: Int, knownLength: Int64?, headLengthUnannounced: Bool = false) -> ResponsePlan? {
        guard phase == .handling else { return nil }
        let bodyForbidden = status == 204 || status == 304 || (status >= 100 && status < 200)
        var keep = keepAlive && !shuttingDown
        let framing: BodyFraming
        if bodyForbidden || (isHead && headLengthUnannounced) {
            framing = .none
        } else if let length = knownLength {
            framing = .contentLength(length)
        } else if version == .http1_1 {
            framing = .chunked
        } else {
            framing = .closeDelimited  // HTTP/1.0 stream: the end of the body is the end of the connection
            keep = false
        }
        if streamingRequestBody {
            // Answered before the request body was read to its end: the rest cannot be skipped
            // safely, so the connection ends after this response (discarding the rest meanwhile).
            keep = false
            lingerOnClose = true
        }
        keepAlive = keep
        return ResponsePlan(framing: framing, keepAlive: keep, sendsBody: !isHead && !bodyForbidden)
    }

    /// Whether the request being handled may be answered with a protocol switch (`101`): HTTP/1.1,
    /// its body complete (none streaming). After a switch the connection is ``closed()``: its socket
    /// belongs to the switch's taker.
    var maySwitchProtocols: Bool {
        phase == .handling && version == .http1_1 && !streamingRequestBody
    }

    /// The response's body is sent over time (large file, stream) before it completes.
    mutating func bodyPending() {
        if phase == .handling { phase = .sendingBody }
    }

    /// The current response's last byte is queued.
    mutating func responseQueued() -> Action {
        guard phase == .handling || phase == .sendingBody else { return .none }
        if keepAlive && !shuttingDown {
            phase = .reading
            return .parseNext
        }
        phase = .closing
        return .finishAndClose
    }

    /// The buffered input holds no complete request (parsing stopped for more bytes).
    mutating func inputExhausted() -> Action {
        guard phase == .reading, peerClosedInput else { return .none }
        // The client sent all it will and every complete request is answered.
        phase = .closing
        return .finishAndClose
    }

    /// The request stream is malformed or over a limit: answer with the error and close. The input
    /// after it is unread, so the close lingers. In a streamed body (bad chunk framing) the error
    /// answers the request whose body it is, unless the handler's response has begun (its head is
    /// queued): then the connection just closes. A response the handler gives afterwards finds no
    /// `.handling` phase and is dropped (``responseReady``).
    mutating func parseFailed(status: Int) -> Action {
        if streamingRequestBody {
            streamingRequestBody = false
            bodyWanted = false
            guard phase == .handling else { return .close }
            phase = .closing
            keepAlive = false
            lingerOnClose = true
            return .respondWithErrorAndClose(status: status)
        }
        guard phase == .reading else { return .none }
        phase = .closing
        lingerOnClose = true
        return .respondWithErrorAndClose(status: status)
    }

    // MARK: Streamed request bodies

    /// The request just parsed streams its body to the handler.
    mutating func requestBodyStreamStarted() {
        streamingRequestBody = true
        bodyWanted = false
    }

    /// The handler asked for the next part: reading and parsing may go on until it is delivered.
    mutating func bodyReadRequested() {
        if streamingRequestBody { bodyWanted = true }
    }

    /// A part was handed to the handler: reading pauses until it asks again (back-pressure).
    mutating func bodyPartDelivered() {
        bodyWanted = false
    }

    /// The streamed body ended (complete, failed, or abandoned).
    mutating func requestBodyEnded() {
        streamingRequestBody = false
        bodyWanted = false
    }

    // MARK: Input and output

    /// A read returned end of stream.
    mutating func peerClosed() -> Action {
        peerClosedInput = true
        switch phase {
        case .lingering: return .close
        case .reading: return .parseNext  // serve what is complete in the buffer, then close
        default: return .none             // the response in progress finishes first
        }
    }

    /// Queued output reached the high watermark: stop parsing and reading until it drains.
    mutating func outputBackedUp() {
        if phase == .reading { pausedForOutput = true }
    }

    /// Everything queued is written. `unreadInput`: the buffer holds bytes not parsed, or the socket
    /// may hold more.
    mutating func outputWritten(unreadInput: Bool) -> Action {
        switch phase {
        case .closing:
            if !peerClosedInput && (lingerOnClose || unreadInput) {
                phase = .lingering
                return .halfCloseAndLinger
            }
            return .close
        case .reading where pausedForOutput:
            pausedForOutput = false
            return .parseNext
        default:
            return .none
        }
    }

    /// The input discarded (see `discardsInput`) reached its byte bound.
    mutating func lingerLimitReached() -> Action {
        discardsInput ? .close : .none
    }

    // MARK: Deadlines and shutdown

    /// The deadline to run while reading: idle between requests, header while a head is incomplete,
    /// body while a body arrives.
    static func readDeadline(bufferEmpty: Bool, betweenRequests: Bool, readingBody: Bool) -> DeadlineKind {
        if bufferEmpty && betweenRequests { return .idle }
        return readingBody ? .body : .header
    }

    /// `kind`'s deadline passed. A request that does not arrive in time gets 408; an idle
    /// connection, a stalled write, a handshake or a linger ends silently.
    mutating func deadlinePassed(_ kind: DeadlineKind) -> Action {
        switch kind {
        case .none: return .none
        case .header, .body:
            guard phase == .reading else {
                requestBodyEnded()  // a streamed body that stalled: the handler owns the response
                return .close
            }
            phase = .closing
            lingerOnClose = true
            return .respondWithErrorAndClose(status: 408)
        case .idle, .write, .handshake, .linger:
            return .close
        }
    }

    /// Graceful shutdown. `idle`: no byte of a next request is buffered and no output is pending.
    /// An idle connection closes now; a busy one finishes its current response with
    /// `Connection: close`.
    mutating func shutdownRequested(idle: Bool) -> Action {
        shuttingDown = true
        return phase == .reading && idle ? .close : .none
    }

    /// The socket is closed.
    mutating func closed() {
        phase = .closed
    }
}
