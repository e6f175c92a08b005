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
/// order, enforces timeouts and limits.
///
/// I/O is driven by the connection's `EventLoop`: its socket sits in the loop's edge-triggered epoll
/// set, the loop calls `handleEvents` with each readiness edge and `checkDeadline` periodically. The
/// connection remembers the edges (`readReady`, `waitingWritable`) and pauses reading by ignoring
/// them (`readPaused`), so it never has to touch the epoll registration after adding it.
///
/// Thread-safety (why `@unchecked Sendable` is sound): every mutable property is read and written only
/// on `queue`, the serial queue of the connection's event loop (shared with the loop's other
/// connections, never run concurrently with itself). The loop calls in only from `queue`; the
/// handler's `respond` callback either runs synchronously on `queue` (detected through
/// `handlerThread`, an atomic) or hops onto `queue` with `queue.async`; stream writers hop onto
/// `queue` the same way. Immutable properties (`id`, `loop`, `queue`, `context`, `remoteAddress`,
/// `transport` reference) are set in `init`. The only cross-thread state is `handlerThread` and
/// `StreamWriter.cancelled`, both atomics.
final class Connection: EventLoopMember, @unchecked Sendable {
    let id: UInt64
    let remoteAddress: String
    let queue: DispatchQueue
    private let loop: EventLoop
    private let context: ServerContext
    private let transport: ByteTransport
    private var parser: RequestParser

    private enum State { case reading, handling, sendingBody, closing, closed }
    private var state = State.reading

    // Input buffer: valid bytes are inBuffer[inStart..<inEnd].
    private var inBuffer: [UInt8]
    private var inStart = 0
    private var inEnd = 0
    private var peerClosedInput = false
    /// `InputSequence` number of the latest read that returned bytes (0 before the first).
    private var lastReadSequence: UInt64 = 0
    /// What `prefetch` read, for `finishPrefetch`.
    private var prefetched = ReadOutcome.nothing
    /// Plain TCP: reads may be taken ahead of handling (`prefetch`). Not TLS, whose reads drive the handshake.
    private let prefetchable: Bool

    // Output: bytes not yet written are out[outSent...]; then an optional file region.
    private var out: [UInt8] = []
    private var outSent = 0
    private var pendingFile: (file: OpenFile, offset: Int64, remaining: Int64)?
    private var stream: StreamWriter?
    private var streamAcknowledgement: (@Sendable () -> Void)?

    // Readiness, from the loop's edge-triggered events. `readReady`: input may be waiting (set by a
    // read edge, cleared when a read finds the socket drained). `readPaused`: do not read now (a
    // request is being handled, or output is backed up). `waitingWritable`: a write would block; the
    // next write edge resumes `flush`.
    private var registered = false
    private var readReady = false
    private var readPaused = false
    private var inReadLoop = false
    private var waitingWritable = false

    // Deadlines, checked by the loop's sweep (`checkDeadline`).
    private enum DeadlineKind { case none, idle, header, body, write, handshake }
    private var deadlineKind = DeadlineKind.none
    private var deadline = DispatchTime.distantFuture

    // Current request.
    private var requestsServed = 0
    private var currentKeepAlive = true
    private var currentIsHead = false
    private var currentVersion = HTTPVersion.http1_1
    private var currentMethod = ""
    private var currentTarget = ""
    private var currentStatus = 0
    private var currentBytes: Int64 = 0
    private var currentStart: UInt64 = 0
    private var continueSent = false
    private var inProcessInput = false
    private var inFlush = false
    private var blockedOnOutput = false
    private var shuttingDown = false
    /// pthread id of the thread running the handler synchronously on `queue`, else 0.
    private let handlerThread = Atomic<UInt>(0)

    /// `transport` carries the bytes (plain TCP, or TLS). The connection owns it and closes it after
    /// it left its event loop.
    init(id: UInt64, transport: ByteTransport, remoteAddress: String, context: ServerContext) {
        self.id = id
        self.remoteAddress = remoteAddress
        self.context = context
        self.transport = transport
        self.prefetchable = transport is PlainTCPTransport
        self.parser = RequestParser(limits: context.configuration.limits)
        self.loop = context.loops.nextLoop()
        self.queue = loop.queue
        self.inBuffer = []
    }

    /// Joins the event loop and starts reading. Call once, from any thread.
    func start() {
        queue.async { self.setUp() }
    }

    private func setUp() {
        if transport.isEstablished {
            setDeadline(.idle, after: context.configuration.idleTimeout)
        } else {
            setDeadline(.handshake, after: transport.handshakeTimeout)  // TLS: the handshake comes first
        }
        // Adding to the epoll set reports input that arrived already (an edge for the current state).
        guard loop.register(self, descriptor: transport.descriptor) else { close(); return }
        registered = true
        if shuttingDown { close() }
    }

    // MARK: Events (called by the loop, on `queue`)

    /// One readiness edge from the loop: `mask` holds epoll event bits.
    func handleEvents(_ mask: UInt32) {
        guard noteEdges(mask) else { return }
        if readReady && !readPaused { readLoop() }
    }

    /// Takes in the edges in `mask`: resumes a blocked write, remembers that input may be waiting.
    /// False when the connection is (or has just been) closed.
    private func noteEdges(_ mask: UInt32) -> Bool {
        guard state != .closed else { return false }
        if mask & (EPOLLOUT.rawValue | EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 && waitingWritable {
            waitingWritable = false
            flush()
            if transport.readNeedsWritable && state != .closed { readReady = true }  // TLS handshake waiting to write
        }
        guard state != .closed else { return false }
        if mask & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 {
            readReady = true
        }
        return true
    }

    /// First half of a readiness edge, for a loop that reads all of a round's ready sockets before
    /// handling any (so requests read in one round share one freshness check, see `InputSequence`):
    /// the edges as `handleEvents` takes them, then at most one read, not yet handled. True when the
    /// loop must call `finishPrefetch()` after the round's reads. TLS connections are handled whole
    /// here (their reads drive the handshake) and return false.
    func prefetch(_ mask: UInt32) -> Bool {
        guard prefetchable else { handleEvents(mask); return false }
        guard noteEdges(mask), readReady && !readPaused else { return false }
        prefetched = readOnce()
        return prefetched != .nothing
    }

    /// Second half: handles the prefetched input, then reads on as `handleEvents` would.
    func finishPrefetch() {
        let outcome = prefetched
        prefetched = .nothing
        guard state != .closed else { return }
        inReadLoop = true  // resumeReading must not schedule a read: readLoop below reads on
        handle(outcome)
        inReadLoop = false
        if readReady && !readPaused && state != .closed { readLoop() }
    }

    /// Reads input that may be waiting since reading resumed (scheduled through `loop.scheduleRead`).
    func readPending() {
        guard state != .closed, readReady, !readPaused else { return }
        readLoop()
    }

    /// Reads and processes while input may be waiting and reading is not paused. Bounded, so one
    /// busy client cannot monopolise the loop: after a few rounds it yields until after the batch.
    private func readLoop() {
        inReadLoop = true
        defer { inReadLoop = false }
        var rounds = 0
        while state != .closed && readReady && !readPaused {
            if rounds == 8 { loop.scheduleRead(self); return }
            rounds += 1
            onReadable()
        }
    }

    // MARK: Reading

    private func onReadable() {
        handle(readOnce())
    }

    /// What one read left to do.
    enum ReadOutcome { case nothing, bytes, endOfStream }

    /// One read into the input buffer, without handling what it brought: the caller passes the
    /// outcome to `handle(_:)`, at once (`onReadable`) or after the loop has read its other ready
    /// sockets (`prefetch` / `finishPrefetch`).
    private func readOnce() -> ReadOutcome {
        guard state != .closed else { return .nothing }
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
            // raises a new edge, so no read that could only return EAGAIN.
            if transport.inputDrained(afterReading: n, of: inBuffer.count - end) { readReady = false }
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
            peerClosedInput = true
            readReady = false
            suspendReading()
            return .endOfStream
        case .failed:
            close()
            return .nothing
        }
    }

    /// Handles what `readOnce` brought.
    private func handle(_ outcome: ReadOutcome) {
        switch outcome {
        case .nothing: break
        case .bytes: processInput()
        case .endOfStream: if state == .reading { processInput() }
        }
    }

    private func suspendReading() {
        readPaused = true
    }

    private func resumeReading() {
        guard state != .closed, !peerClosedInput else { return }
        readPaused = false
        // Input that arrived while paused raised its edge then: read it now (unless the read loop
        // on the stack will).
        if readReady && !inReadLoop { loop.scheduleRead(self) }
    }

    /// Parses buffered input and dispatches complete requests while the connection is free to.
    private func processInput() {
        inProcessInput = true
        while state == .reading && inStart < inEnd {
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
                if parser.awaitingContinue && !continueSent {
                    continueSent = true
                    out.append(contentsOf: ResponseWriter.continueResponse)
                }
            case .request(let request):
                continueSent = false
                dispatch(request)
            }
            if parsed.output.isNeedMoreData { break }
            if out.count - outSent >= context.configuration.writeHighWatermark {
                flush()
                // A client that pipelines but does not read: stop parsing and reading until the
                // output drains (flush resumes us), so neither buffer grows without bound.
                if state == .reading && out.count - outSent >= context.configuration.writeHighWatermark {
                    blockedOnOutput = true
                    break
                }
            }
        }
        if inStart == inEnd {
            inStart = 0
            inEnd = 0
            // The buffer itself stays while the connection is busy; the sweep releases it when idle.
        }
        if state == .reading {
            if peerClosedInput {
                // The client sent all it will: serve what is complete, then close.
                state = .closing
            } else {
                updateReadDeadline()
            }
        }
        if state != .reading || blockedOnOutput { suspendReading() } else { resumeReading() }
        inProcessInput = false
        flush()
    }

    private func updateReadDeadline() {
        if inStart == inEnd && parser.isBetweenRequests {
            setDeadline(.idle, after: context.configuration.idleTimeout)
        } else if parser.isReadingBody {
            if deadlineKind != .body { setDeadline(.body, after: context.configuration.bodyReadTimeout) }
        } else if deadlineKind != .header {
            setDeadline(.header, after: context.configuration.headerReadTimeout)
        }
    }

    // MARK: Handling

    private func dispatch(_ parsed: ParsedRequest) {
        requestsServed += 1
        state = .handling
        setDeadline(.none, after: .zero)
        currentStart = MonotonicClock.nanoseconds()
        currentKeepAlive = parsed.keepAlive && requestsServed < context.configuration.maxRequestsPerConnection
        currentVersion = parsed.version
        // https on TLS connections, or when a trusted proxy says so (TrustedProxies); else http.
        let head = parsed.makeHTTPRequest { fields in
            context.configuration.trustedProxies.scheme(secureConnection: transport.isSecure, remoteAddress: remoteAddress,
                                                        fields: fields)
        }
        currentIsHead = head.method == .head
        if context.accessLog.isEnabled {
            currentMethod = parsed.method
            currentTarget = parsed.target
        }
        let request = HTTPServerRequest(head: head, body: parsed.body, version: parsed.version,
                                        remoteAddress: remoteAddress, connectionID: id, sequenceNumber: requestsServed,
                                        receivedSequence: lastReadSequence, eventLoop: loop)
        let me = UInt(bitPattern: Int(bitPattern: pthread_self()))
        handlerThread.store(me, ordering: .relaxed)
        context.handler.handle(request) { [self] response in
            if self.handlerThread.load(ordering: .relaxed) == UInt(bitPattern: Int(bitPattern: pthread_self())) {
                self.deliver(response)
            } else {
                self.queue.async { self.deliver(response) }
            }
        }
        handlerThread.store(0, ordering: .relaxed)
    }

    /// Takes the handler's response (on `queue`) and queues it for writing.
    private func deliver(_ response: HTTPServerResponse) {
        guard state == .handling else { return }  // closed meanwhile, or `respond` called twice
        let code = response.head.status.code
        let bodyForbidden = code == 204 || code == 304 || (code >= 100 && code < 200)
        var keepAlive = currentKeepAlive && !shuttingDown
        let framing: BodyFraming
        if bodyForbidden {
            framing = .none
        } else if let length = response.body.knownLength {
            framing = .contentLength(length)
        } else if currentVersion == .http1_1 {
            framing = .chunked
        } else {
            framing = .closeDelimited
            keepAlive = false
        }
        currentKeepAlive = keepAlive
        currentStatus = code
        if out.capacity == 0 { out.reserveCapacity(1024 + Int(min(response.body.knownLength ?? 0, Int64(context.configuration.inlineFileBodyLimit)))) }
        currentBytes = 0
        if let prepared = response.prepared {
            ResponseWriter.appendHead(prepared, framing: framing, keepAlive: keepAlive, requestVersion: currentVersion,
                                      serverLine: context.serverLine, into: &out)
        } else {
            ResponseWriter.appendHead(response.head, framing: framing, keepAlive: keepAlive, requestVersion: currentVersion,
                                      serverLine: context.serverLine, into: &out)
        }
        if currentIsHead || bodyForbidden {
            responseComplete()
            return
        }
        switch response.body {
        case .bytes(let bytes):
            out.append(contentsOf: bytes)
            currentBytes = Int64(bytes.count)
            responseComplete()
        case .file(let body):
            currentBytes = Int64(body.range.count)
            if Int64(body.range.count) <= Int64(context.configuration.inlineFileBodyLimit) {
                if appendFileRange(body.file, body.range) {
                    responseComplete()
                } else {
                    close()
                }
            } else {
                pendingFile = (body.file, body.range.lowerBound, Int64(body.range.count))
                state = .sendingBody
            }
        case .stream(let body):
            state = .sendingBody
            let writer = StreamWriter(connection: self, chunked: framing == .chunked)
            stream = writer
            DispatchQueue.global().async { body.produce(writer) }
        }
        if !inProcessInput { flush() }
    }

    /// Reads `range` of `file` onto the end of `out`. False when the file could not be read in full.
    private func appendFileRange(_ file: OpenFile, _ range: Range<Int64>) -> Bool {
        let count = Int(range.count)
        let old = out.count
        out.append(contentsOf: repeatElement(0, count: count))
        var done = 0
        while done < count {
            let n = out.withUnsafeMutableBytes { b in
                pread(file.descriptor, b.baseAddress! + old + done, count - done, off_t(range.lowerBound) + off_t(done))
            }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            done += n
        }
        return true
    }

    /// The current response's last byte is queued: log it and move on to the next request or close.
    private func responseComplete() {
        context.accessLog.record(method: currentMethod, target: currentTarget, status: currentStatus, bytes: currentBytes,
                                 startNanos: currentStart, connectionID: id)
        if currentKeepAlive {
            state = .reading
            if inFlush {
                // Completed inside flush (file body sent): continue after flush returns, not recursively.
                queue.async { if self.state == .reading { self.processInput() } }
            } else if !inProcessInput {
                processInput()
            }
        } else {
            state = .closing
            suspendReading()
            if !inProcessInput && !inFlush { flush() }
        }
    }

    private func respondWithParseError(_ error: HTTPParseError) {
        currentMethod = "-"
        currentTarget = "-"
        currentStart = MonotonicClock.nanoseconds()
        sendErrorAndClose(status: error.status, reason: error.reason)
    }

    private func sendErrorAndClose(status: Int, reason: String) {
        let response = HTTPServerResponse.text(HTTPResponse.Status(code: status), reason)
        ResponseWriter.appendHead(response.head, framing: .contentLength(response.body.knownLength ?? 0), keepAlive: false,
                                  requestVersion: .http1_1, serverLine: context.serverLine, into: &out)
        if case .bytes(let b) = response.body { out.append(contentsOf: b) }
        context.accessLog.record(method: currentMethod, target: currentTarget, status: status,
                                 bytes: response.body.knownLength ?? 0, startNanos: currentStart, connectionID: id)
        state = .closing
        suspendReading()
        flush()
    }

    // MARK: Writing

    /// Writes as much pending output as the socket takes; arms the write source when it is full.
    private func flush() {
        inFlush = true
        defer { inFlush = false }
        while state != .closed {
            if outSent < out.count {
                let sent = outSent
                let more = pendingFile != nil
                let result = out.withUnsafeBytes { b in transport.write(UnsafeRawBufferPointer(rebasing: b[sent...]), more: more) }
                switch result {
                case .bytes(let n):
                    outSent += n
                    if outSent == out.count { out.removeAll(keepingCapacity: true); outSent = 0 }  // the sweep frees it when idle
                    if deadlineKind == .write { setDeadline(.write, after: context.configuration.writeTimeout) }
                    continue
                case .wouldBlock:
                    waitForWritable()
                    return
                case .failed, .endOfStream:
                    close()
                    return
                }
            }
            if let file = pendingFile {
                let count = Int(min(file.remaining, 1 << 20))
                if let result = transport.sendFile(file.file.descriptor, offset: file.offset, count: count) {
                    switch result {
                    case .bytes(let n):
                        advanceFile(by: n)
                        continue
                    case .wouldBlock:
                        waitForWritable()
                        return
                    case .failed, .endOfStream:
                        close()
                        return
                    }
                } else {
                    // Transport cannot send files directly: stage up to 64 KiB through `out`.
                    let n = Int(min(file.remaining, 64 * 1024))
                    guard appendFileRange(file.file, file.offset..<file.offset + Int64(n)) else { close(); return }
                    advanceFile(by: n)
                    continue
                }
            }
            // Everything queued is written.
            waitingWritable = false
            if deadlineKind == .write { setDeadline(.none, after: .zero) }
            if let ack = streamAcknowledgement { streamAcknowledgement = nil; ack() }
            if blockedOnOutput {
                blockedOnOutput = false
                queue.async { if self.state == .reading { self.processInput() } }
            }
            if state == .closing && pendingFile == nil { close() }
            if state == .reading && deadlineKind == .none { updateReadDeadline() }
            return
        }
    }

    private func advanceFile(by n: Int) {
        guard var file = pendingFile else { return }
        file.offset += Int64(n)
        file.remaining -= Int64(n)
        if file.remaining <= 0 {
            pendingFile = nil
            responseComplete()
        } else {
            pendingFile = file
        }
    }

    private func waitForWritable() {
        if deadlineKind != .write && deadlineKind != .handshake { setDeadline(.write, after: context.configuration.writeTimeout) }
        waitingWritable = true  // the write edge that follows the EAGAIN calls `flush` again
    }

    // MARK: Streams

    /// Called on `queue` by a `StreamWriter`.
    fileprivate func streamWrite(_ writer: StreamWriter, _ chunk: [UInt8], then: @escaping @Sendable () -> Void) {
        guard state == .sendingBody, stream === writer else { then(); return }
        if writer.chunked { ChunkedCoding.appendChunk(chunk, into: &out) } else { out.append(contentsOf: chunk) }
        currentBytes += Int64(chunk.count)
        if let previous = streamAcknowledgement { streamAcknowledgement = nil; previous() }
        streamAcknowledgement = then
        flush()
        // Below the watermark the producer may continue before the socket drained.
        if out.count - outSent < context.configuration.writeHighWatermark, let ack = streamAcknowledgement {
            streamAcknowledgement = nil
            ack()
        }
    }

    fileprivate func streamFinish(_ writer: StreamWriter) {
        guard state == .sendingBody, stream === writer else { return }
        if writer.chunked { out.append(contentsOf: ChunkedCoding.lastChunk) }
        stream = nil
        responseComplete()
        if state != .closed { flush() }
    }

    fileprivate func streamAbort(_ writer: StreamWriter) {
        guard stream === writer else { return }
        close()  // the body is cut short: closing without the last chunk tells the client it is incomplete
    }

    // MARK: Timeouts

    private func setDeadline(_ kind: DeadlineKind, after duration: Duration) {
        deadlineKind = kind
        guard kind != .none else { deadline = .distantFuture; return }
        deadline = loop.now + .nanoseconds(Int(duration.nanoseconds))
    }

    /// Called by the loop's sweep (on `queue`): acts on a passed deadline. Also releases the input
    /// and output buffers of a connection with nothing in them, so an idle keep-alive connection holds
    /// none, while a busy one reuses its buffers from request to request.
    func checkDeadline(_ now: DispatchTime) {
        if state == .reading && inStart == inEnd && outSent == out.count && pendingFile == nil {
            if !inBuffer.isEmpty { inBuffer = [] }
            if out.capacity > 0 { out = [] }
        }
        guard state != .closed, deadlineKind != .none, now >= deadline else { return }
        switch deadlineKind {
        case .idle, .write, .none, .handshake:
            close()
        case .header, .body:
            currentMethod = "-"
            currentTarget = "-"
            currentStart = MonotonicClock.nanoseconds()
            sendErrorAndClose(status: 408, reason: deadlineKind == .header ? "request head not received in time"
                                                                             : "request body not received in time")
        }
    }

    // MARK: Shutdown and close

    /// Graceful shutdown: idle connections close now; busy ones finish the current response with
    /// `Connection: close`. Call from any thread.
    func beginShutdown() {
        queue.async {
            self.shuttingDown = true
            if self.state == .reading && self.inStart == self.inEnd && self.parser.isBetweenRequests && self.outSent == self.out.count {
                self.close()
            }
        }
    }

    /// Closes at once (deadline passed). Call from any thread.
    func forceClose() { queue.async { self.close() } }

    private func close() {
        guard state != .closed else { return }
        state = .closed
        pendingFile = nil
        if let s = stream { s.cancelled.store(true, ordering: .relaxed); stream = nil }
        if let ack = streamAcknowledgement { streamAcknowledgement = nil; ack() }
        // Leave the epoll set before the descriptor closes (and may be reused).
        if registered { loop.deregister(self, descriptor: transport.descriptor); registered = false }
        transport.close()
        out = []
        inBuffer = []
        context.registry.remove(self)
    }
}

extension RequestParser.Output {
    var isNeedMoreData: Bool { if case .needMoreData = self { return true } else { return false } }
}

/// The `ResponseBodyWriter` handed to stream producers; forwards to its connection's queue.
/// Thread-safety: immutable references plus an atomic `cancelled` flag.
final class StreamWriter: ResponseBodyWriter, @unchecked Sendable {
    private let connection: Connection
    let chunked: Bool
    let cancelled = Atomic<Bool>(false)

    init(connection: Connection, chunked: Bool) {
        self.connection = connection
        self.chunked = chunked
    }

    var isCancelled: Bool { cancelled.load(ordering: .relaxed) }

    func write(_ chunk: [UInt8], then: @escaping @Sendable () -> Void) {
        if isCancelled { then(); return }
        connection.queue.async { self.connection.streamWrite(self, chunk, then: then) }
    }

    func finish() { connection.queue.async { self.connection.streamFinish(self) } }

    func abort() { connection.queue.async { self.connection.streamAbort(self) } }
}
