#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import HTTPCore
import HTTPTypes

/// One upstream HTTP/1.1 connection, a member of its pool's event loop: connects (non-blocking,
/// TLS for https servers), writes one exchange's request (head, then the body as the connection
/// takes it, `Expect: 100-continue` honoured), parses the response with `ResponseParser` and hands
/// it to the exchange's delegate with back-pressure (no socket read while a body part awaits
/// `resume`), then goes back to the pool or closes.
///
/// It is reused only when the exchange completed cleanly: response framed (not close-delimited),
/// keep-alive, the request fully sent, no stray bytes after the response, the upstream's side still
/// open (checked again when the pool hands it out: `isUsableWhenIdle`), under
/// `maxRequestsPerConnection`. Any error, cancel or timeout closes it. A reused connection that dies
/// (EOF, reset) before any response byte re-runs an idempotent, replayable request once on a fresh
/// connection (RFC 9110 §9.2.2).
///
/// Deadlines (checked by the loop's sweep): connect (name lookup + TCP + TLS handshake; the lookup,
/// which has no socket to sweep, by a timer of its own), send (no write progress), read (no byte; not
/// while paused by the delegate), the 100-continue wait, idle. Names are looked up by the client's
/// `UpstreamNameResolver` (cached per host and port), address literals used as they are.
///
/// Thread-safety: used on its loop's queue only (`EventLoopMember` contract), hence
/// `@unchecked Sendable` for the closures that hop back to that queue.
final class UpstreamConnection: EventLoopMember, @unchecked Sendable {
    let id = EventLoopMemberID.next()
    let server: UpstreamServer
    private let pool: LoopPool
    private var loop: EventLoop { pool.loop }
    /// `drive()` is queued for the end of the loop's round (`begin`).
    private var driveIsDeferred = false

    private var transport: (any ByteTransport)?
    private var connected = false
    private var registered = false
    private(set) var isClosed = false
    /// Waiting for the resolver (no socket yet).
    private var resolving = false

    private var exchange: ExchangeContext?
    /// Exchanges completed on this connection.
    private var completedExchanges = 0
    /// The current exchange runs on a connection that served another before.
    private var isReused = false
    private var parser: ResponseParser

    // Request side.
    private enum BodyState {
        case none
        /// Waiting for `100 Continue` (or its timeout) before sending these bytes / this stream.
        case heldBytes([UInt8])
        case heldStream(any RequestBodySource, chunked: Bool)
        /// The source may be asked for the next part when `out` is drained.
        case pull(any RequestBodySource, chunked: Bool)
        /// Asked; waiting for its answer.
        case pulling(any RequestBodySource, chunked: Bool)
        case done
    }
    private var body = BodyState.none
    private var declaredLength: Int?
    private var streamedBytes = 0
    private var out: [UInt8] = []
    /// Largest output buffer kept from one request to the next.
    private static let keptOutputCapacity = 16 << 10
    private var outOffset = 0
    private var requestSent = false

    // Response side.
    /// Bytes read and not yet parsed, from `inputOffset`. Its capacity (at most the loop's read scratch
    /// plus a partial head) is kept across the reads of one exchange and dropped when the connection goes
    /// idle: body parts are slices of it, so a delegate that keeps one makes the next read copy-on-write
    /// instead of overwriting it.
    private var input: [UInt8] = []
    private var inputOffset = 0
    private var paused = false
    /// True while `didReceiveBodyPart` runs (a resume from within it only un-pauses the parse loop).
    private var delivering = false
    private var sawResponseByte = false
    /// Input may be waiting: set by a read edge (registration is edge-triggered), cleared by a read
    /// that finds the socket empty (EAGAIN, or a short plain-TCP read: the next arrival raises a new
    /// edge). So sending a request is not followed by a read that can only return EAGAIN.
    /// `peerHalfClosed`: EPOLLRDHUP/HUP seen, so the FIN may wait behind the data without a new edge:
    /// read on until end of stream.
    private var readReady = true
    private var peerHalfClosed = false
    private var reusable = true
    /// The upstream's `Keep-Alive: timeout=N` of the last response, in nanoseconds (0 = none).
    private var upstreamKeepAlive: UInt64 = 0

    /// Uptime (ns) of the next deadline, 0 = none; `phase` names it.
    private var deadline: UInt64 = 0
    private var phase = Phase.connect
    private enum Phase: String { case connect, send, read, `continue`, idle }
    /// Bumped per exchange, so a stale `resume` or body part is ignored.
    private var generation: UInt64 = 0

    init(pool: LoopPool, server: UpstreamServer) {
        self.pool = pool
        self.server = server
        parser = ResponseParser(limits: pool.shared.configuration.limits)
    }

    /// For deadlines: the loop's round time (no clock read per use during a round).
    private var now: UInt64 { loop.now.uptimeNanoseconds }

    // MARK: Connecting

    /// Starts the TCP connection: to an address literal at once, to a name the resolver has cached at
    /// once, else after the lookup (on the resolver's threads; the connect deadline covers it).
    func connect() {
        phase = .connect
        deadline = now &+ pool.shared.connectTimeout
        let host = server.host, port = UInt16(clamping: server.port)
        if Socket.isAddressLiteral(host) {
            didStartConnect(Result { try Socket.connect(host: host, port: port) })
        } else if let addresses = pool.shared.resolver.cached(host: host, port: port) {
            didStartConnect(Result { try Socket.connect(to: addresses, host: host, port: port) })
        } else {
            resolving = true
            pool.shared.resolver.resolve(host: host, port: port) { result in
                self.loop.execute { self.didResolve(result) }
            }
            // The loop's sweep sees registered members only, and this one has no socket yet.
            let timeout = DispatchTimeInterval.nanoseconds(Int(clamping: pool.shared.connectTimeout))
            loop.queue.asyncAfter(deadline: .now() + timeout) { [weak self] in
                guard let self, self.resolving, !self.isClosed else { return }
                self.resolving = false
                self.connectFailedByTimeout()
            }
        }
    }

    private func didResolve(_ result: Result<[SocketAddress], any Error>) {
        guard resolving, !isClosed else { return }  // timed out or closed meanwhile
        resolving = false
        let host = server.host, port = UInt16(clamping: server.port)
        didStartConnect(result.flatMap { addresses in Result { try Socket.connect(to: addresses, host: host, port: port) } })
    }

    private func didStartConnect(_ result: Result<(descriptor: Int32, connected: Bool), any Error>) {
        let started: (descriptor: Int32, connected: Bool)
        switch result {
        case .success(let s): started = s
        case .failure(let error):
            connectFailed(errno: (error as? SocketError)?.errno ?? EHOSTUNREACH)
            return
        }
        guard !isClosed else { _ = Glibc.close(started.descriptor); return }
        if server.tls {
            guard case .success(let context) = pool.shared.tlsContext,
                  let tls = TLSClientTransport(descriptor: started.descriptor, context: context,
                                               serverName: server.host) else {
                _ = Glibc.close(started.descriptor)
                connectFailed(errno: EPROTO)
                return
            }
            transport = tls
        } else {
            transport = PlainTCPTransport(descriptor: started.descriptor)
        }
        guard loop.register(self, descriptor: started.descriptor) else {
            connectFailed(errno: errno)
            return
        }
        registered = true
        if started.connected { didConnect() }
    }

    private func didConnect() {
        connected = true
        if transport?.isEstablished == true { enterSendPhase() }
        drive()
    }

    private func connectFailed(errno code: Int32) {
        forgetResolvedName()
        let context = exchange
        exchange = nil
        close()
        if let context {
            pool.connectFailed(context, server: server, error: .connectFailed(server: server, errno: code))
        }
    }

    /// After a failed connect to a name: its kept addresses may be stale (the server moved), so the next
    /// connection looks the name up again instead of trying them until they expire.
    private func forgetResolvedName() {
        guard !Socket.isAddressLiteral(server.host) else { return }
        pool.shared.resolver.forget(host: server.host, port: UInt16(clamping: server.port))
    }

    // MARK: EventLoopMember

    func handleEvents(_ mask: UInt32) {
        guard !isClosed else { return }
        if mask & ReadinessMask.readable != 0 { readReady = true }
        if mask & ReadinessMask.peerClosed != 0 { peerHalfClosed = true }
        if !connected {
            // EPOLLOUT | EPOLLERR | EPOLLHUP (0x4 | 0x8 | 0x10): the connect finished, one way or the other.
            guard mask & 0x1C != 0, let fd = transport?.descriptor else { return }
            let error = Socket.connectResult(fd)
            guard error == 0 else { connectFailed(errno: error); return }
            didConnect()
            return
        }
        drive()
    }

    func checkDeadline(_ now: DispatchTime) {
        guard !isClosed, deadline != 0, now.uptimeNanoseconds >= deadline else { return }
        deadline = 0
        switch phase {
        case .idle:
            close()
        case .continue:
            releaseHeldBody()
            drive()
        case .connect:
            connectFailedByTimeout()
        case .send, .read:
            fail(.timedOut(server: server, phase: phase.rawValue))
        }
    }

    private func connectFailedByTimeout() {
        forgetResolvedName()
        let context = exchange
        exchange = nil
        close()
        if let context {
            pool.connectFailed(context, server: server, error: .timedOut(server: server, phase: "connect"))
        }
    }

    // MARK: Exchanges

    /// Whether this idle pooled connection can take an exchange: open, connected, the upstream has not
    /// closed its side, and no input waits (a byte or EOF: the server is done with it), which a read
    /// checks when input may be waiting (`readReady`) or when `probe` asks. `probe`: for a request
    /// that cannot be replayed (a connection found dead once it is sent fails it), since the FIN of a
    /// server that just closed may not have been harvested yet: one system call, EAGAIN when alive.
    /// A replayable request skips it (that read can only fail, per reuse): on a connection found
    /// dead it is re-run on a fresh one.
    func isUsableWhenIdle(probe: Bool) -> Bool {
        guard !isClosed, exchange == nil, connected, !peerHalfClosed, let transport else { return false }
        guard readReady || probe else { return true }
        guard case .wouldBlock = transport.read(into: pool.scratch) else { return false }
        readReady = false
        return true
    }

    /// Takes `context` as the current exchange (a new connection: before `connect`; an idle one: at once).
    func begin(_ context: ExchangeContext) {
        generation &+= 1
        exchange = context
        context.connection = self
        isReused = completedExchanges > 0
        let request = context.request
        parser.expectResponse(toHEAD: request.method == .head, upgradeRequested: request.upgrade)
        let framing = RequestHeadEncoder.framing(for: request)
        out.removeAll(keepingCapacity: true)
        RequestHeadEncoder.append(request, server: server, framing: framing, to: &out)
        outOffset = 0
        requestSent = false
        streamedBytes = 0
        sawResponseByte = false
        reusable = true
        paused = false
        input.removeAll(keepingCapacity: true)
        inputOffset = 0
        let expectsContinue = request.head.headerFields[values: .expect].contains { $0.lowercased() == "100-continue" }
        let chunked = framing == .chunked
        if case .contentLength(let n) = framing { declaredLength = n } else { declaredLength = nil }
        switch request.body {
        case .none:
            body = .done
        case .bytes(let bytes):
            if expectsContinue && !bytes.isEmpty { body = .heldBytes(bytes) } else { out += bytes; body = .done }
        case .stream(let source, _):
            body = expectsContinue ? .heldStream(source, chunked: chunked) : .pull(source, chunked: chunked)
        }
        if connected {
            enterSendPhase()
            // Inside a loop batch a small request leaves with the round's other writes (EventLoop.deferFlush).
            if driveIsDeferred || (out.count <= EventLoop.deferredWriteLimit && loop.deferFlush(self)) {
                driveIsDeferred = true
            } else {
                drive()
            }
        }
    }

    func flushDeferred() {
        driveIsDeferred = false
        if !isClosed && exchange != nil { drive() }
    }

    /// Back in the pool: read only to notice the server closing. A `Keep-Alive: timeout=N` from the
    /// upstream shortens the stay to N - 1 seconds (so we stop using it before the server drops it).
    func becomeIdle(until: UInt64) {
        phase = .idle
        deadline = until
        if upstreamKeepAlive > 0 {
            deadline = min(until, now &+ upstreamKeepAlive &- 1_000_000_000)
        }
    }

    /// True when the upstream's `Keep-Alive: timeout` leaves time to reuse the connection.
    var upstreamAllowsPooling: Bool { upstreamKeepAlive == 0 || upstreamKeepAlive > 1_000_000_000 }

    /// `timeout=N` of the `Keep-Alive` field (RFC 2068 §19.7.1.1, still sent by some servers), in ns.
    private static func keepAliveTimeout(_ head: ParsedResponseHead) -> UInt64 {
        // Most responses have no such field: find it without building strings.
        guard (0..<head.fieldCount).contains(where: { isKeepAliveName(head.fieldNameBytes(at: $0)) }) else { return 0 }
        for value in head.values(of: "keep-alive") {
            for parameter in value.fieldMembers(separatedBy: ",", trimmingOWS: false) {
                let pair = parameter.fieldPair(separatedBy: "=")
                if let name = pair.first, let value = pair.second, name.lowercased() == "timeout",
                   let seconds = UInt64(value), seconds < 1_000_000 {
                    return seconds * 1_000_000_000
                }
            }
        }
        return 0
    }

    /// `Keep-Alive`, in any case.
    private static func isKeepAliveName(_ name: ArraySlice<UInt8>) -> Bool {
        guard name.count == 10 else { return false }
        return zip(name, "keep-alive".utf8).allSatisfy { $0 | 0x20 == $1 }
    }

    /// The exchange was cancelled: close without calling its delegate.
    func abandon() {
        exchange = nil
        close()
    }

    private func enterSendPhase() {
        guard transport?.isEstablished == true else { return }  // TLS: the connect deadline covers the handshake
        if phase == .connect || phase == .idle {
            phase = .send
            deadline = now &+ pool.shared.sendTimeout
        }
    }

    private func enterReadPhase() {
        phase = .read
        deadline = paused ? 0 : now &+ pool.shared.readTimeout
    }

    // MARK: Driving

    private func drive() {
        flush()
        if !isClosed && !paused { readInput() }
    }

    /// Writes pending request bytes; asks the body source for more when drained.
    private func flush() {
        guard let transport, exchange != nil, connected else { return }
        while !isClosed {
            if outOffset < out.count {
                let result = out.withUnsafeBytes { transport.write(UnsafeRawBufferPointer(rebasing: $0[outOffset...]), more: false) }
                switch result {
                case .bytes(let n):
                    outOffset += n
                    if phase == .connect { enterSendPhase() }
                    if phase == .send { deadline = now &+ pool.shared.sendTimeout }
                    continue
                case .wouldBlock:
                    if phase == .connect { enterSendPhase() }
                    return
                case .failed(let code):
                    writeFailed(errno: code)
                    return
                case .endOfStream:
                    writeFailed(errno: EPIPE)
                    return
                }
            }
            // Kept for the next request's head, unless a large body grew it (an idle connection
            // would hold that much for as long as it stays pooled).
            if out.capacity > Self.keptOutputCapacity { out = [] } else { out.removeAll(keepingCapacity: true) }
            outOffset = 0
            switch body {
            case .none, .done:
                if !requestSent {
                    requestSent = true
                    if phase != .read { enterReadPhase() }
                }
                return
            case .heldBytes, .heldStream:
                if phase != .continue && phase != .read {
                    phase = .continue
                    deadline = now &+ pool.shared.continueTimeout
                }
                return
            case .pulling:
                return
            case .pull(let source, let chunked):
                body = .pulling(source, chunked: chunked)
                if phase == .send { deadline = 0 }  // waiting for our own client, not the upstream
                let generation = generation
                source.pull { part in
                    self.loop.execute { self.receiveBodyPart(part, generation: generation) }
                }
                return
            }
        }
    }

    private func receiveBodyPart(_ part: RequestBodyPart, generation: UInt64) {
        guard generation == self.generation, !isClosed, exchange != nil,
              case .pulling(let source, let chunked) = body else { return }
        switch part {
        case .bytes(let bytes):
            streamedBytes += bytes.count
            if let declared = declaredLength, streamedBytes > declared { cancelExchange(); return }
            if chunked { ChunkedCoding.appendChunk(bytes, into: &out) } else { out += bytes }
            if let declared = declaredLength, streamedBytes == declared {
                // Every declared byte is here: the request is complete once `out` drains, whether or
                // not the source's `.end` arrives before the upstream answers (it comes one queue hop
                // later; waiting for it made a fast answer find the body unfinished and close a
                // reusable connection). The source is still asked once more, so it sees its end
                // (the server's streamed body then finishes and the client connection stays
                // keep-alive); that answer is not needed and is dropped.
                body = .done
                source.pull { _ in }
            } else {
                body = .pull(source, chunked: chunked)
            }
        case .end:
            if let declared = declaredLength, streamedBytes != declared { cancelExchange(); return }
            if chunked { out += ChunkedCoding.lastChunk }
            body = .done
        case .failed:
            cancelExchange()
            return
        }
        if phase != .read && phase != .send { phase = .send }
        if phase == .send { deadline = now &+ pool.shared.sendTimeout }
        flush()
    }

    private func releaseHeldBody() {
        switch body {
        case .heldBytes(let bytes):
            out += bytes
            body = .done
        case .heldStream(let source, let chunked):
            body = .pull(source, chunked: chunked)
        default:
            return
        }
        if phase == .continue {
            phase = .send
            deadline = now &+ pool.shared.sendTimeout
        }
    }

    /// A write failed: the server may still have answered (e.g. an early error response), so read
    /// what is there; the request cannot complete, so the connection is not reused.
    private func writeFailed(errno code: Int32) {
        if transport?.isEstablished == false {
            connectFailed(errno: code)
            return
        }
        reusable = false
        out.removeAll()
        outOffset = 0
        body = .done
        requestSent = false
        if phase != .read { enterReadPhase() }
        // Read on the next turn (this may run inside the parse loop): the reset or EOF, or an answer.
        let generation = generation
        loop.execute {
            guard generation == self.generation, !self.isClosed, !self.paused else { return }
            self.readInput()
        }
    }

    // MARK: Reading

    private func readInput() {
        guard let transport else { return }
        if exchange == nil {
            // Idle: any byte or EOF means the server is done with this connection.
            guard connected, readReady else { return }
            switch transport.read(into: pool.scratch) {
            case .wouldBlock: readReady = false
            default: close()
            }
            return
        }
        processInput()
        while !isClosed && !paused && exchange != nil && readReady {
            let result = transport.read(into: pool.scratch)
            switch result {
            case .bytes(let n):
                if !peerHalfClosed && transport.inputDrained(afterReading: n, of: pool.scratch.count) { readReady = false }
                let fresh = UnsafeRawBufferPointer(rebasing: pool.scratch[0..<n])
                if inputOffset < input.count {
                    input.removeSubrange(0..<inputOffset)
                } else {
                    input.removeAll(keepingCapacity: true)
                }
                input.append(contentsOf: fresh)
                inputOffset = 0
                sawResponseByte = true
                if phase == .read { deadline = now &+ pool.shared.readTimeout }
                processInput()
            case .wouldBlock:
                readReady = false
                if phase == .connect { enterSendPhase() }
                return
            case .endOfStream:
                endOfInput(errno: 0)
                return
            case .failed(let code):
                if transport.isEstablished == false { connectFailed(errno: code); return }
                endOfInput(errno: code)
                return
            }
        }
    }

    /// Parses buffered input and delivers events until more input is needed or the delegate holds a
    /// body part.
    private func processInput() {
        while !isClosed && !paused, let context = exchange {
            let base = inputOffset
            let step: (consumed: Int, event: ResponseParser.Event)
            do {
                step = try input.withUnsafeBytes { try parser.parse(UnsafeRawBufferPointer(rebasing: $0[base...])) }
            } catch {
                fail(.invalidResponse(server: server, reason: error.reason))
                return
            }
            inputOffset += step.consumed
            switch step.event {
            case .needMoreData:
                if inputOffset == input.count { input.removeAll(keepingCapacity: true); inputOffset = 0 }
                return
            case .informational(let head):
                if head.status == 100 { releaseHeldBody(); flush() }
                context.delegate?.didReceiveInformational(head.makeHTTPResponse())
            case .head(let head):
                if !head.transferCodings.isEmpty && head.transferCodings != [Self.chunked] {
                    fail(.invalidResponse(server: server, reason: "unsupported transfer coding"))
                    return
                }
                if !head.keepAlive { reusable = false }
                upstreamKeepAlive = Self.keepAliveTimeout(head)
                switch body {
                case .heldBytes, .heldStream:
                    // A final answer before the body was sent: it never will be.
                    body = .done
                    reusable = false
                default:
                    break
                }
                if head.status < 500 { pool.shared.selector.markHealthy(server) }
                if head.status == 101 { return switchProtocols(head, context) }
                if phase != .read { enterReadPhase() }
                context.delegate?.didReceiveHead(parsed: head)
            case .body(let range):
                let bytes = input[(base + range.lowerBound)..<(base + range.upperBound)]
                paused = true
                if phase == .read { deadline = 0 }
                let generation = generation
                delivering = true
                context.delegate?.didReceiveBodyPart(bytes) {
                    // On the loop, resume inline: within the delegate's call (a buffering delegate)
                    // the parse loop just goes on; later, the read resumes at once. Elsewhere, hop.
                    if self.loop.isCurrent {
                        if self.delivering {
                            guard generation == self.generation, self.paused else { return }
                            self.paused = false
                            if self.phase == .read { self.deadline = self.now &+ self.pool.shared.readTimeout }
                        } else {
                            self.resume(generation: generation)
                        }
                    } else {
                        self.loop.execute { self.resume(generation: generation) }
                    }
                }
                delivering = false
            case .end(let trailers):
                complete(trailers: trailers)
                return
            }
        }
    }

    private static let chunked: [UInt8] = Array("chunked".utf8)

    /// `101` to a request that asked for it (the parser yields it as the final head only then): the
    /// exchange ends and the socket, with the bytes after the head, goes to the delegate. The
    /// connection leaves its loop and its pool without closing the socket; it is never reused.
    private func switchProtocols(_ head: ParsedResponseHead, _ context: ExchangeContext) {
        guard let transport else { return }
        let rest = Array(input[inputOffset...])
        let unsent = Array(out[outOffset...])
        exchange = nil
        isClosed = true
        deadline = 0
        if registered { loop.deregister(self, descriptor: transport.descriptor); registered = false }
        self.transport = nil
        pool.remove(self)
        context.switched(head, DetachedConnection(transport: transport, loop: loop, bufferedInput: rest, pendingOutput: unsent))
    }

    private func resume(generation: UInt64) {
        guard generation == self.generation, paused, !isClosed, exchange != nil else { return }
        paused = false
        if phase == .read { deadline = now &+ pool.shared.readTimeout }
        processInput()
        if !paused && !isClosed && exchange != nil {
            flush()
            readInput()
        }
    }

    private func endOfInput(errno code: Int32) {
        guard exchange != nil else { close(); return }
        if code == 0, case .end(let trailers)? = try? parser.endOfInput() {
            reusable = false
            complete(trailers: trailers)
            return
        }
        if let context = exchange, isReused, !sawResponseByte, parser.hasNotStarted, context.isReplayable, !context.retried {
            context.retried = true
            exchange = nil
            close()
            pool.start(context, server: server, fresh: true)
            return
        }
        fail(.closedEarly(server: server))
    }

    private func complete(trailers: [(name: String, value: String)]) {
        guard let context = exchange else { return }
        exchange = nil
        completedExchanges += 1
        var fields: HTTPFields?
        if !trailers.isEmpty {
            var f = HTTPFields()
            for t in trailers { if let name = HTTPField.Name(t.name) { f.append(HTTPField(name: name, value: t.value)) } }
            fields = f
        }
        let clean: Bool
        if case .done = body { clean = requestSent } else { clean = false }
        // `peerHalfClosed`: the upstream's FIN came with (or before) the response's last bytes. The read
        // loop stops at the response's end, and the readiness edge that announced the FIN is spent, so
        // an idle connection would never notice it: not pooled.
        if reusable && clean && !peerHalfClosed && inputOffset == input.count && upstreamAllowsPooling
            && completedExchanges < pool.shared.configuration.maxRequestsPerConnection {
            input = []  // an idle connection holds no buffer
            inputOffset = 0
            pool.release(self)
        } else {
            close()
        }
        context.finish(trailers: fields)
    }

    private func fail(_ error: HTTPClientError) {
        let context = exchange
        exchange = nil
        close()
        context?.fail(error)
    }

    private func cancelExchange() {
        let context = exchange
        exchange = nil
        close()
        context?.fail(.cancelled)
    }

    /// Closes the socket and leaves the loop and the pool. Idempotent.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        deadline = 0
        if let transport {
            if registered { loop.deregister(self, descriptor: transport.descriptor) }
            transport.close()
        }
        registered = false
        pool.remove(self)
    }
}

extension Error {
    fileprivate var reason: String {
        (self as? ResponseParseError)?.reason ?? String(describing: self)
    }
}
