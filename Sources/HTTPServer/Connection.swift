#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CLinux
import Dispatch
import HTTPTypes
import Synchronization
import HTTPCore

/// One client connection: reads and parses requests, calls the handler, writes responses in request
/// order, enforces timeouts and limits. The decisions (keep-alive, framing, pausing, what a deadline
/// means, how the connection ends) are `ConnectionStateMachine`'s; this class performs them: socket
/// reads and writes, buffers, the handler call, deadlines, the access log.
///
/// I/O is driven by the connection's `EventLoop`: its socket sits in the loop's edge-triggered epoll
/// set, the loop calls `handleEvents` with each readiness edge and `checkDeadline` periodically. The
/// connection remembers the edges (`readReady`, `waitingWritable`) and reads only while the state
/// machine allows (`mayRead`), so it never has to touch the epoll registration after adding it.
///
/// Output is an `OutputQueue` (in-memory segments, a buffer, a file region); streamed response bodies
/// arrive through a `StreamWriter`, streamed request bodies leave through a `RequestBodyStream`
/// (this side of it: `RequestBodyReader`).
///
/// Thread-safety (why `@unchecked Sendable` is sound): every mutable property is read and written only
/// on `queue`, the serial queue of the connection's event loop (shared with the loop's other
/// members, never run concurrently with itself). The loop calls in only from `queue`; the
/// handler's `respond` callback either runs synchronously on `queue` (detected through
/// `handlerThread`, an atomic) or hops onto `queue` with `loop.execute`; stream writers hop onto
/// `queue` the same way. Immutable properties (`id`, `loop`, `queue`, `context`, `remoteAddress`,
/// `transport` reference) are set in `init`. The only cross-thread state is `handlerThread` and
/// `StreamWriter.cancelled`, both atomics.
final class Connection: EventLoopMember, @unchecked Sendable {
    let id: UInt64
    let remoteAddress: String
    /// `remoteAddress`'s host part, for every request's `remoteHost`.
    private let remoteHost: String
    let queue: DispatchQueue
    let loop: EventLoop
    private let context: ServerContext
    private let transport: ByteTransport
    private var parser: RequestParser
    private var machine: ConnectionStateMachine

    // Input buffer: valid bytes are inBuffer[inStart..<inEnd].
    private var inBuffer: [UInt8]
    private var inStart = 0
    private var inEnd = 0
    /// `InputSequence` number of the latest read that returned bytes (0 before the first).
    private var lastReadSequence: UInt64 = 0
    /// What `prefetch` read, for `finishPrefetch`.
    private var prefetched = ReadOutcome.nothing
    /// Plain TCP: reads may be taken ahead of handling (`prefetch`). Not TLS, whose reads drive the handshake.
    private let prefetchable: Bool
    /// Bytes read and discarded while lingering.
    private var lingerBytes = 0
    /// The handler's outstanding `RequestBodyStream.read`, and which stream it belongs to.
    private var bodyReader = RequestBodyReader()

    private var output = OutputQueue()
    private var stream: StreamWriter?
    private var streamAcknowledgement: (@Sendable () -> Void)?

    // Readiness, from the loop's edge-triggered events. `readReady`: input may be waiting (set by a
    // read edge, cleared when a read finds the socket drained). `waitingWritable`: a write would
    // block; the next write edge resumes `flush`. `peerHalfClosed`: EPOLLRDHUP seen, so an end of
    // stream waits behind the data: a short read does not mean drained.
    private var registered = false
    private var readReady = false
    private var inReadLoop = false
    private var waitingWritable = false
    private var peerHalfClosed = false

    // Deadlines, checked by the loop's sweep (`checkDeadline`).
    private typealias DeadlineKind = ConnectionStateMachine.DeadlineKind
    private var deadlineKind = DeadlineKind.none
    private var deadline = DispatchTime.distantFuture

    // Current request, for the access log.
    private var currentMethod = ""
    private var currentTarget = ""
    private var currentStatus = 0
    private var currentBytes: Int64 = 0
    private var currentStart: UInt64 = 0
    private var currentNote: (any AccessLogNote)?
    private var currentCompletion: (@Sendable (Int64, UInt64) -> Void)?
    private var continueSent = false
    private var inProcessInput = false
    /// A `flush()` is queued for the end of the loop's round (``flushSoon()``).
    private var flushIsDeferred = false
    private var inFlush = false
    /// pthread id of the thread running the handler synchronously on `queue`, else 0.
    private let handlerThread = Atomic<UInt>(0)

    /// `transport` carries the bytes (plain TCP, or TLS). The connection owns it and closes it after
    /// it left its event loop.
    init(id: UInt64, transport: ByteTransport, remoteAddress: String, context: ServerContext) {
        self.id = id
        self.remoteAddress = remoteAddress
        self.remoteHost = HTTPServerRequest.host(ofPeerAddress: remoteAddress)
        self.context = context
        self.transport = transport
        self.prefetchable = transport is PlainTCPTransport
        self.parser = RequestParser(limits: context.configuration.limits)
        self.parser.pausesAtBodies = context.configuration.streamsRequestBody != nil
        self.machine = ConnectionStateMachine(maxRequestsPerConnection: context.configuration.maxRequestsPerConnection)
        self.loop = context.loops.nextLoop()
        self.queue = loop.queue
        self.inBuffer = []
    }

    /// Joins the event loop and starts reading. Call once, from any thread.
    func start() {
        loop.execute { self.setUp() }
    }

    private func setUp() {
        guard !isClosed else { return }  // shut down (and closed) before it joined its loop
        if transport.isEstablished {
            setDeadline(.idle, after: context.configuration.idleTimeout)
        } else {
            setDeadline(.handshake, after: transport.handshakeTimeout)  // TLS: the handshake comes first
        }
        // Adding to the epoll set reports input that arrived already (an edge for the current state).
        guard loop.register(self, descriptor: transport.descriptor) else { close(); return }
        registered = true
        if machine.shuttingDown { close() }
    }

    private var isClosed: Bool { machine.phase == .closed }

    /// Bytes queued for writing and not yet written (the file region aside).
    private var pendingOutput: Int { output.pendingBytes }

    // MARK: Events (called by the loop, on `queue`)

    /// One readiness edge from the loop: `mask` holds epoll event bits.
    func handleEvents(_ mask: UInt32) {
        guard noteEdges(mask) else { return }
        if readReady && machine.mayRead { readLoop() }
    }

    /// Takes in the edges in `mask`: resumes a blocked write, remembers that input may be waiting.
    /// False when the connection is (or has just been) closed.
    private func noteEdges(_ mask: UInt32) -> Bool {
        guard !isClosed else { return false }
        if mask & (EPOLLOUT.rawValue | EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 && waitingWritable {
            waitingWritable = false
            flush()
            if transport.readNeedsWritable && !isClosed { readReady = true }  // TLS handshake waiting to write
        }
        guard !isClosed else { return false }
        if mask & ReadinessMask.readable != 0 { readReady = true }
        if mask & ReadinessMask.peerClosed != 0 { peerHalfClosed = true }
        return true
    }

    /// First half of a readiness edge, for a loop that reads all of a round's ready sockets before
    /// handling any (so requests read in one round share one freshness check, see `InputSequence`):
    /// the edges as `handleEvents` takes them, then at most one read, not yet handled. True when the
    /// loop must call `finishPrefetch()` after the round's reads. TLS connections are handled whole
    /// here (their reads drive the handshake) and return false.
    func prefetch(_ mask: UInt32) -> Bool {
        guard prefetchable else { handleEvents(mask); return false }
        guard noteEdges(mask), readReady && machine.mayRead else { return false }
        prefetched = readOnce()
        return prefetched != .nothing
    }

    /// Second half: handles the prefetched input, then reads on as `handleEvents` would.
    func finishPrefetch() {
        let outcome = prefetched
        prefetched = .nothing
        guard !isClosed else { return }
        inReadLoop = true  // resumeReading must not schedule a read: readLoop below reads on
        handle(outcome)
        inReadLoop = false
        if readReady && machine.mayRead && !isClosed { readLoop() }
    }

    /// Reads input that may be waiting since reading resumed (scheduled through `loop.scheduleRead`).
    func readPending() {
        guard !isClosed, readReady, machine.mayRead else { return }
        readLoop()
    }

    /// Reads and processes while input may be waiting and reading is allowed. Bounded, so one
    /// busy client cannot monopolise the loop: after a few rounds it yields until after the batch.
    private func readLoop() {
        inReadLoop = true
        defer { inReadLoop = false }
        var rounds = 0
        while !isClosed && readReady && machine.mayRead {
            if rounds == 8 { loop.scheduleRead(self); return }
            rounds += 1
            handle(readOnce())
        }
    }

    // MARK: Reading

    /// What one read left to do.
    /// `discarded`: bytes were read and thrown away (see `ConnectionStateMachine.discardsInput`);
    /// reading goes on.
    enum ReadOutcome { case nothing, bytes, discarded, endOfStream }

    /// One read into the input buffer, without handling what it brought: the caller passes the
    /// outcome to `handle(_:)`, at once (`readLoop`) or after the loop has read its other ready
    /// sockets (`prefetch` / `finishPrefetch`). While lingering, what is read is discarded here.
    private func readOnce() -> ReadOutcome {
        guard !isClosed else { return .nothing }
        let chunk = context.configuration.readChunkSize
        if inStart == inEnd { inStart = 0; inEnd = 0 }
        if inBuffer.isEmpty {
            // Allocated per burst of input and released once it is consumed (see processInput), so an
            // idle keep-alive connection holds no input buffer.
            inBuffer = [UInt8](unsafeUninitializedCapacity: chunk) { _, n in n = chunk }
        } else if inBuffer.count - inEnd < chunk {
            if inStart > 0 {
                inBuffer.withUnsafeMutableBytes { b in
                    _ = memmove(b.baseAddress!, b.baseAddress! + inStart, inEnd - inStart)
                }
                inEnd -= inStart
                inStart = 0
            }
            if inBuffer.count - inEnd < chunk {
                inBuffer.append(contentsOf: repeatElement(0, count: chunk - (inBuffer.count - inEnd)))
            }
        }
        let end = inEnd
        let result = inBuffer.withUnsafeMutableBytes { b in
            transport.read(into: UnsafeMutableRawBufferPointer(rebasing: b[end..<b.count]))
        }
        switch result {
        case .bytes(let n):
            // Drained (plain TCP: a short read; TLS: also nothing held in OpenSSL): the next arrival
            // raises a new edge, so no read that could only return EAGAIN. Unless the peer's FIN is
            // known to wait behind the data: it raises no new edge, so read on until end of stream.
            if !peerHalfClosed && transport.inputDrained(afterReading: n, of: inBuffer.count - end) { readReady = false }
            if machine.discardsInput {
                lingerBytes += n
                if lingerBytes > context.configuration.lingerMaxBytes { perform(machine.lingerLimitReached()) }
                return .discarded
            }
            inEnd += n
            lastReadSequence = InputSequence.next()
            return .bytes
        case .wouldBlock:
            readReady = false
            // TLS: the handshake may have to write before it can read on, or may just have finished.
            if transport.readNeedsWritable { waitForWritable() }
            if deadlineKind == .handshake && transport.isEstablished { updateReadDeadline() }
            return .nothing
        case .endOfStream:
            readReady = false
            return .endOfStream
        case .failed:
            close()
            return .nothing
        }
    }

    /// Handles what `readOnce` brought.
    private func handle(_ outcome: ReadOutcome) {
        switch outcome {
        case .nothing, .discarded: break
        case .bytes: processInput()
        case .endOfStream:
            failBodyStream(.connectionClosed)
            perform(machine.peerClosed())
        }
    }

    /// Input that arrived while reading was not allowed raised its edge then: read it now (unless
    /// the read loop on the stack will).
    private func resumeReading() {
        if readReady && machine.mayRead && !inReadLoop { loop.scheduleRead(self) }
    }

    /// Parses buffered input and dispatches complete requests while the state machine allows.
    private func processInput() {
        inProcessInput = true
        while machine.mayParse && (inStart < inEnd || parser.hasPendingOutput) {
            let start = inStart, end = inEnd
            let parsed: (consumed: Int, output: RequestParser.Output)
            do {
                parsed = try inBuffer.withUnsafeBytes { (b: UnsafeRawBufferPointer) throws -> (consumed: Int, output: RequestParser.Output) in
                    let r = try parser.parse(UnsafeRawBufferPointer(rebasing: b[start..<end]))
                    return (consumed: r.consumed, output: r.output)
                }
            } catch {
                respondWithParseError(error as? HTTPParseError ?? HTTPParseError(status: 400, reason: "bad request"))
                break
            }
            inStart += parsed.consumed
            switch parsed.output {
            case .needMoreData:
                // A streamed body's 100 Continue waits for the handler's first read.
                if parser.awaitingContinue && !continueSent && !parser.isStreamingBody {
                    continueSent = true
                    output.buffer.append(contentsOf: ResponseWriter.continueResponse)
                }
            case .request(let request):
                continueSent = false
                dispatch(request)
            case .head(let request):
                let head = makeHead(request)
                let streamed = context.configuration.streamsRequestBody?(head) ?? false
                do {
                    try parser.continueBody(streaming: streamed)
                } catch {
                    respondWithParseError(error)
                    break
                }
                if streamed { dispatch(request, head: head, streamedBody: true) }
                continue
            case .bodyPart(let range):
                let bytes = Array(inBuffer[(start + range.lowerBound)..<(start + range.upperBound)])
                machine.bodyPartDelivered()
                if deadlineKind == .body { setDeadline(.none, after: .zero) }  // the handler's pace now
                deliverBodyPart(.bytes(bytes))
                continue
            case .bodyEnd(let trailers):
                continueSent = false
                machine.requestBodyEnded()
                if deadlineKind == .body { setDeadline(.none, after: .zero) }
                deliverBodyPart(.end(trailers: trailers))
                continue
            }
            if parsed.output.isNeedMoreData { break }
            if pendingOutput >= context.configuration.writeHighWatermark {
                flush()
                // A client that pipelines but does not read: stop parsing and reading until the
                // output drains (flush resumes us), so neither buffer grows without bound.
                if pendingOutput >= context.configuration.writeHighWatermark { machine.outputBackedUp() }
            }
        }
        if inStart == inEnd {
            inStart = 0
            inEnd = 0
            // The buffer itself stays while the connection is busy; the sweep releases it when idle.
        }
        if machine.mayParse {
            // Every complete request is dispatched: close if the client sent all it will.
            if machine.inputExhausted() == .none { updateReadDeadline() }
        }
        resumeReading()
        inProcessInput = false
        flushSoon()
    }

    private func updateReadDeadline() {
        let kind = ConnectionStateMachine.readDeadline(bufferEmpty: inStart == inEnd, betweenRequests: parser.isBetweenRequests,
                                                       readingBody: parser.isReadingBody)
        switch kind {
        case .idle: setDeadline(.idle, after: context.configuration.idleTimeout)
        case .body: if deadlineKind != .body { setDeadline(.body, after: context.configuration.bodyReadTimeout) }
        default: if deadlineKind != .header { setDeadline(.header, after: context.configuration.headerReadTimeout) }
        }
    }

    // MARK: Handling

    /// The handler's view of a parsed head. https on TLS connections, or when a trusted proxy says
    /// so (TrustedProxies); else http.
    private func makeHead(_ parsed: ParsedRequest) -> HTTPRequest {
        parsed.makeHTTPRequest { fields in
            context.configuration.trustedProxies.scheme(secureConnection: transport.isSecure, remoteAddress: remoteAddress,
                                                        fields: fields)
        }
    }

    /// Hands a request to the handler. `head`: already made (a streamed body's head); `streamedBody`:
    /// the body follows through a `RequestBodyStream`.
    private func dispatch(_ parsed: ParsedRequest, head prepared: HTTPRequest? = nil, streamedBody: Bool = false) {
        setDeadline(.none, after: .zero)
        currentStart = MonotonicClock.nanoseconds()
        let head = prepared ?? makeHead(parsed)
        let method = head.method
        machine.requestParsed(keepAlive: parsed.keepAlive, version: parsed.version, isHead: method == .head)
        if context.accessLog.isEnabled {
            currentMethod = parsed.method
            currentTarget = parsed.target
        }
        var bodyStream: RequestBodyStream?
        if streamedBody {
            machine.requestBodyStreamStarted()
            let generation = bodyReader.begin()
            bodyStream = RequestBodyStream(expectedLength: parsed.contentLength.map(Int64.init), loop: loop) { [weak self] then in
                guard let self else { then(.failed(.connectionClosed)); return }
                self.bodyRead(generation: generation, then: then)
            }
        }
        var request = HTTPServerRequest(head: head, method: method, body: parsed.body, version: parsed.version,
                                        remoteAddress: remoteAddress, connectionID: id, sequenceNumber: machine.requestsServed,
                                        receivedSequence: lastReadSequence, eventLoop: loop, bodyStream: bodyStream,
                                        remoteHost: remoteHost)
        if parsed.version == .http1_1 {
            let channel = interimChannel ?? InterimResponseChannel(loop: loop, connection: self)
            interimChannel = channel
            request.interim = InterimResponseSender(channel: channel, sequenceNumber: machine.requestsServed)
        }
        request.fromTrustedProxy = peerIsTrustedProxy
        request.received = ReceivedRequestHead(parsed)
        request.answeredBy(self)
        let me = UInt(bitPattern: Int(bitPattern: pthread_self()))
        handlerThread.store(me, ordering: .relaxed)
        // `respond` captures only the request (one reference: no closure context is allocated); the
        // request names this connection and its number on it (`sequenceNumber`).
        context.handler.handle(request) { [request] response in request.answer(response) }
        handlerThread.store(0, ordering: .relaxed)
    }

    /// The handler's answer to request number `sequence` (its `respond`, from any thread): taken only
    /// while that request is the one being handled (a second `respond`, or one arriving late, never
    /// answers a later request).
    func take(_ response: consuming HTTPServerResponse, sequence: Int) {
        if handlerThread.load(ordering: .relaxed) == UInt(bitPattern: Int(bitPattern: pthread_self())) {
            deliver(response, sequence: sequence)
        } else if loop.isCurrent && !inFlush {
            // Answered on this loop by another member's event (a proxied response from an
            // upstream connection): deliver now, not after the loop's current batch.
            deliver(response, sequence: sequence)
        } else {
            loop.execute { [response] in self.deliver(response, sequence: sequence) }
        }
    }

    /// Whether the peer is one of `ServerConfiguration.trustedProxies` (decided once per connection).
    private lazy var peerIsTrustedProxy: Bool = context.configuration.trustedProxies.trusts(remoteAddress: remoteAddress)

    // MARK: Interim responses

    /// The channel of this connection's `InterimResponseSender`s (made with the first HTTP/1.1
    /// request; it references the connection until `close`).
    private var interimChannel: InterimResponseChannel?

    /// An `InterimResponseSender.send` (on `queue`): written now outside a flush (as the handler's
    /// final response would be), else after it, so it keeps its place before the final response.
    func sendInterim(_ response: HTTPResponse, sequenceNumber: Int) {
        if !inFlush {
            writeInterim(response, sequenceNumber: sequenceNumber)
        } else {
            loop.execute { self.writeInterim(response, sequenceNumber: sequenceNumber) }
        }
    }

    /// Queues the interim response while its request's final response has not begun (on `queue`).
    private func writeInterim(_ response: HTTPResponse, sequenceNumber: Int) {
        guard !isClosed, machine.phase == .handling, machine.requestsServed == sequenceNumber,
              machine.version == .http1_1 else { return }
        ResponseWriter.appendInterim(response, into: &output.buffer)
        if !inProcessInput { flushSoon() }
    }

    // MARK: Streamed request bodies

    /// A `RequestBodyStream.read` (on `queue`).
    private func bodyRead(generation: UInt64, then: @escaping @Sendable (RequestBodyStream.Part) -> Void) {
        if isClosed { then(.failed(.connectionClosed)); return }
        guard bodyReader.accepts(generation), machine.streamingRequestBody else {
            then(.failed(.finished))
            return
        }
        bodyReader.wait(then)
        machine.bodyReadRequested()
        if parser.awaitingContinue && !continueSent {
            continueSent = true
            output.buffer.append(contentsOf: ResponseWriter.continueResponse)
        }
        processInput()  // parses what is buffered; else sets the body deadline and resumes reading
    }

    /// Hands `part` to the outstanding read.
    private func deliverBodyPart(_ part: RequestBodyStream.Part) {
        let then = bodyReader.take()
        then?(part)
    }

    /// Ends a streamed body that can no longer complete; an outstanding read gets `error`.
    private func failBodyStream(_ error: RequestBodyError) {
        guard machine.streamingRequestBody || bodyReader.hasPendingRead else { return }
        machine.requestBodyEnded()
        deliverBodyPart(.failed(error))
    }

    /// Takes the handler's response to request number `sequence` (on `queue`) and queues it for
    /// writing; dropped unless that request is the one being handled.
    private func deliver(_ response: HTTPServerResponse, sequence: Int) {
        guard machine.requestsServed == sequence else { return release(response) }
        let code = response.statusCode
        if code == 101 { return switchProtocols(response) }
        // Nil: closed meanwhile, or `respond` called twice.
        let plan = switch (machine.isHead, response.headLength) {
        case (true, .announced(let length)): machine.responseReady(status: code, knownLength: length)
        case (true, .unannounced): machine.responseReady(status: code, knownLength: nil, headLengthUnannounced: true)
        default: machine.responseReady(status: code, knownLength: response.body.knownLength)
        }
        guard let plan else { return release(response) }
        currentStatus = code
        currentNote = response.accessLogNote
        currentCompletion = response.onComplete
        if output.buffer.capacity == 0 { output.buffer.reserveCapacity(1024 + Int(min(response.body.knownLength ?? 0, Int64(context.configuration.inlineFileBodyLimit)))) }
        currentBytes = 0
        if let prepared = response.prepared {
            ResponseWriter.appendHead(prepared, framing: plan.framing, keepAlive: plan.keepAlive, requestVersion: machine.version,
                                      serverLine: context.serverLine, into: &output.buffer)
        } else if let forwarded = response.forwarded {
            ResponseWriter.appendHead(forwarded, framing: plan.framing, keepAlive: plan.keepAlive, requestVersion: machine.version,
                                      serverLine: context.serverLine, into: &output.buffer)
        } else {
            ResponseWriter.appendHead(response.head, framing: plan.framing, keepAlive: plan.keepAlive, requestVersion: machine.version,
                                      serverLine: context.serverLine, into: &output.buffer)
        }
        guard plan.sendsBody else {
            release(response)  // no body goes out (HEAD, 204, 304)
            responseComplete()
            return
        }
        switch response.body {
        case .bytes(let bytes):
            output.appendBody(bytes, inlineLimit: context.configuration.inlineFileBodyLimit)
            currentBytes = Int64(bytes.count)
            responseComplete()
        case .file(let body):
            currentBytes = Int64(body.range.count)
            if Int64(body.range.count) <= Int64(context.configuration.inlineFileBodyLimit) {
                if output.appendFileRange(body.file, body.range) {
                    responseComplete()
                } else {
                    close()
                }
            } else {
                output.pendingFile = (body.file, body.range.lowerBound, Int64(body.range.count))
                machine.bodyPending()
            }
        case .stream(let body):
            machine.bodyPending()
            let writer = StreamWriter(connection: self, chunked: plan.framing == .chunked)
            stream = writer
            DispatchQueue.global().async { body.produce(writer) }
        }
        if !inProcessInput { flushSoon() }
    }

    /// A response whose body will not be sent (an answer to HEAD, or one dropped: the connection
    /// closed meanwhile, a second `respond`): a stream's producer still gets its one call, with a
    /// writer cancelled from the start, so it can release what it holds (an upstream exchange).
    private func release(_ response: HTTPServerResponse) {
        guard case .stream(let body) = response.body else { return }
        let writer = StreamWriter(connection: self, chunked: false)
        writer.cancelled.store(true, ordering: .relaxed)
        DispatchQueue.global().async { body.produce(writer) }
    }

    /// A `101 Switching Protocols` answer (on `queue`): the head is written, then the socket, with
    /// the input read beyond the request and any output not yet written, goes to the response's
    /// `switchProtocols` taker, and this connection leaves its loop without closing the socket.
    /// A switch that cannot happen (no taker, HTTP/1.0, a streamed body) is answered 502 instead.
    private func switchProtocols(_ response: HTTPServerResponse) {
        guard machine.phase == .handling else { return }  // closed meanwhile: the taker closes what it holds
        guard let taker = response.switchProtocols, machine.maySwitchProtocols else {
            return deliver(.text(.badGateway, "protocol switch not possible here"), sequence: machine.requestsServed)
        }
        ResponseWriter.appendSwitchingHead(response.head, serverLine: context.serverLine, into: &output.buffer)
        currentStatus = 101
        context.accessLog.record(method: currentMethod, target: currentTarget, status: 101, bytes: 0,
                                 startNanos: currentStart, connectionID: id, note: response.accessLogNote)
        response.onComplete?(0, MonotonicClock.nanoseconds() &- currentStart)
        flush()
        guard !isClosed else { return }
        let unsent = output.takeUnsent()
        let input = Array(inBuffer[inStart..<inEnd])
        machine.closed()
        interimChannel?.connection = nil
        if registered { loop.deregister(self, descriptor: transport.descriptor); registered = false }
        inBuffer = []
        context.registry.remove(self)
        taker(DetachedConnection(transport: transport, loop: loop, bufferedInput: input, pendingOutput: unsent))
    }

    /// The current response's last byte is queued: log it and move on to the next request or close.
    private func responseComplete() {
        failBodyStream(.connectionClosed)  // answered before its body ended: the connection closes after it
        context.accessLog.record(method: currentMethod, target: currentTarget, status: currentStatus, bytes: currentBytes,
                                 startNanos: currentStart, connectionID: id, note: currentNote)
        currentNote = nil
        if let completion = currentCompletion {
            currentCompletion = nil
            completion(currentBytes, MonotonicClock.nanoseconds() &- currentStart)
        }
        switch machine.responseQueued() {
        case .parseNext:
            if inFlush {
                // Completed inside flush (file body sent): continue after flush returns, not recursively.
                loop.execute { if self.machine.mayParse { self.processInput() } }
            } else if !inProcessInput {
                processInput()
            }
        case .finishAndClose:
            if !inProcessInput && !inFlush { flush() }
        default:
            break
        }
    }

    private func respondWithParseError(_ error: HTTPParseError) {
        if machine.streamingRequestBody {
            // A streamed body's framing is invalid: the error answers its request (access-logged with
            // the request's method and target) unless the handler's response has begun; the handler's
            // outstanding read fails, and a response it gives afterwards is dropped.
            let action = machine.parseFailed(status: error.status)
            deliverBodyPart(.failed(.invalidFraming(error.reason)))
            perform(action, reason: error.reason)
            return
        }
        currentMethod = "-"
        currentTarget = "-"
        currentStart = MonotonicClock.nanoseconds()
        perform(machine.parseFailed(status: error.status), reason: error.reason)
    }

    /// Queues an error response that ends the connection, after everything queued before it.
    private func sendError(status: Int, reason: String) {
        let response = HTTPServerResponse.text(HTTPResponse.Status(code: status), reason)
        ResponseWriter.appendHead(response.head, framing: .contentLength(response.body.knownLength ?? 0), keepAlive: false,
                                  requestVersion: .http1_1, serverLine: context.serverLine, into: &output.buffer)
        if case .bytes(let b) = response.body { output.buffer.append(contentsOf: b) }
        context.accessLog.record(method: currentMethod, target: currentTarget, status: status,
                                 bytes: response.body.knownLength ?? 0, startNanos: currentStart, connectionID: id)
        flush()
    }

    /// Performs a state-machine action. `reason`: the text of an error response.
    private func perform(_ action: ConnectionStateMachine.Action, reason: String = "") {
        switch action {
        case .none:
            break
        case .parseNext:
            if !inProcessInput { processInput() }
        case .finishAndClose:
            if !inProcessInput && !inFlush { flush() }
        case .respondWithErrorAndClose(let status):
            // The unread input is discarded from now on (see `discardsInput`), while the responses
            // before the error and the error itself are written.
            inStart = 0
            inEnd = 0
            lingerBytes = 0
            sendError(status: status, reason: reason)
            resumeReading()
        case .halfCloseAndLinger:
            // Every response is written: send FIN, drop unread requests, and discard what else the
            // client sends until it closes (or the linger bounds), so it can read all of our output.
            transport.shutdownOutput()
            inStart = 0
            inEnd = 0
            setDeadline(.linger, after: context.configuration.lingerTimeout)
            resumeReading()
        case .close:
            close()
        }
    }

    // MARK: Writing

    /// `flush()` now, or — for small output (no file, at most `EventLoop.deferredWriteLimit` bytes)
    /// inside a batch — at the end of the loop's current round (``EventLoop/deferFlush(_:)``): a
    /// round's small responses then leave together.
    private func flushSoon() {
        if flushIsDeferred { return }
        if output.pendingFile == nil && pendingOutput <= EventLoop.deferredWriteLimit && loop.deferFlush(self) {
            flushIsDeferred = true
        } else {
            flush()
        }
    }

    func flushDeferred() {
        flushIsDeferred = false
        if !isClosed && !inFlush { flush() }
    }

    /// Writes as much pending output as the socket takes; waits for writability when it is full.
    private func flush() {
        inFlush = true
        defer { inFlush = false }
        while !isClosed {
            switch output.writeNext(to: transport) {
            case .wrote:
                if deadlineKind == .write { setDeadline(.write, after: context.configuration.writeTimeout) }
                continue
            case .fileProgress(let finished):
                // Progress, as for bytes from memory: `writeTimeout` bounds the wait between two writes.
                if deadlineKind == .write { setDeadline(.write, after: context.configuration.writeTimeout) }
                if finished { responseComplete() }
                continue
            case .wouldBlock:
                waitForWritable()
                return
            case .failed:
                close()
                return
            case .drained:
                break
            }
            // Everything queued is written.
            waitingWritable = false
            if deadlineKind == .write { setDeadline(.none, after: .zero) }
            if let ack = streamAcknowledgement { streamAcknowledgement = nil; ack() }
            let wasPaused = machine.pausedForOutput
            let action = machine.outputWritten(unreadInput: inStart < inEnd || readReady)
            if action == .parseNext && wasPaused {
                loop.execute { if self.machine.mayParse { self.processInput() } }
            } else {
                perform(action)
            }
            if machine.phase == .reading && deadlineKind == .none { updateReadDeadline() }
            return
        }
    }

    private func waitForWritable() {
        if deadlineKind != .write && deadlineKind != .handshake { setDeadline(.write, after: context.configuration.writeTimeout) }
        waitingWritable = true  // the write edge that follows the EAGAIN calls `flush` again
    }

    // MARK: Streams

    /// Called on `queue` by a `StreamWriter`.
    func streamWrite(_ writer: StreamWriter, _ chunk: [UInt8], then: @escaping @Sendable () -> Void) {
        guard machine.phase == .sendingBody, stream === writer else { then(); return }
        if writer.chunked { ChunkedCoding.appendChunk(chunk, into: &output.buffer) } else { output.buffer.append(contentsOf: chunk) }
        currentBytes += Int64(chunk.count)
        if let previous = streamAcknowledgement { streamAcknowledgement = nil; previous() }
        streamAcknowledgement = then
        flush()
        // Below the watermark the producer may continue before the socket drained.
        if pendingOutput < context.configuration.writeHighWatermark, let ack = streamAcknowledgement {
            streamAcknowledgement = nil
            ack()
        }
    }

    func streamFinish(_ writer: StreamWriter) {
        guard machine.phase == .sendingBody, stream === writer else { return }
        if writer.chunked { output.buffer.append(contentsOf: ChunkedCoding.lastChunk) }
        stream = nil
        responseComplete()
        if !isClosed { flush() }
    }

    func streamAbort(_ writer: StreamWriter) {
        guard stream === writer else { return }
        close()  // the body is cut short: closing without the last chunk tells the client it is incomplete
    }

    // MARK: Timeouts

    private func setDeadline(_ kind: DeadlineKind, after duration: Duration) {
        deadlineKind = kind
        guard kind != .none else { deadline = .distantFuture; return }
        // Plain arithmetic on the uptime (adding a DispatchTimeInterval is a call into libdispatch).
        let (at, overflow) = loop.now.uptimeNanoseconds.addingReportingOverflow(duration.nanoseconds)
        deadline = overflow ? .distantFuture : DispatchTime(uptimeNanoseconds: at)
    }

    /// Called by the loop's sweep (on `queue`): acts on a passed deadline. Also releases the input
    /// and output buffers of a connection with nothing in them, so an idle keep-alive connection holds
    /// none, while a busy one reuses its buffers from request to request.
    func checkDeadline(_ now: DispatchTime) {
        if machine.phase == .reading && inStart == inEnd && pendingOutput == 0 && output.pendingFile == nil {
            if !inBuffer.isEmpty { inBuffer = [] }
            if output.buffer.capacity > 0 { output.buffer = [] }
        }
        guard !isClosed, deadlineKind != .none, now >= deadline else { return }
        let kind = deadlineKind
        if kind == .body { failBodyStream(.timedOut) }
        let action = machine.deadlinePassed(kind)
        if case .respondWithErrorAndClose = action {
            currentMethod = "-"
            currentTarget = "-"
            currentStart = MonotonicClock.nanoseconds()
            setDeadline(.none, after: .zero)
        }
        perform(action, reason: kind == .header ? "request head not received in time" : "request body not received in time")
    }

    // MARK: Shutdown and close

    /// Graceful shutdown: idle connections close now; busy ones finish the current response with
    /// `Connection: close`. Call from any thread.
    func beginShutdown() {
        loop.execute {
            let idle = self.inStart == self.inEnd && self.parser.isBetweenRequests && self.pendingOutput == 0
            self.perform(self.machine.shutdownRequested(idle: idle))
        }
    }

    /// Closes at once (deadline passed). Call from any thread.
    func forceClose() { loop.execute { self.close() } }

    private func close() {
        guard !isClosed else { return }
        failBodyStream(.connectionClosed)
        machine.closed()
        interimChannel?.connection = nil  // breaks the channel's reference to this connection
        output.pendingFile = nil
        if let s = stream { s.cancelled.store(true, ordering: .relaxed); stream = nil }
        if let ack = streamAcknowledgement { streamAcknowledgement = nil; ack() }
        // Leave the epoll set before the descriptor closes (and may be reused).
        if registered { loop.deregister(self, descriptor: transport.descriptor); registered = false }
        transport.close()
        output.removeAll()
        inBuffer = []
        context.registry.remove(self)
    }
}

extension RequestParser.Output {
    var isNeedMoreData: Bool { if case .needMoreData = self { return true } else { return false } }
}
