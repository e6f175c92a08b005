#if canImport(Glibc)
import Glibc
#endif
import ByteTransportTesting
import Dispatch
import Foundation
import HTTPCore
@testable import HTTPServer
import Logging

// The `connection` fuzz mode: the input is a script of events played against a real server
// `Connection` on an `InMemoryTransport`, with the real event loop and the handler of
// ConnectionFuzzHandler.swift. Deterministic: the transport raises no edges, the script delivers
// readiness itself on the loop's queue and waits for the loop to be quiet after every event;
// deadlines are checked at times the script picks (the configured timeouts are far longer than a run).
//
// Input: three configuration bytes (request-body streaming, sendfile or staged files, read chunk
// size, write high watermark, requests per connection, parser limits, linger budget; the client's
// bytes per write and initial window), then events, one byte each plus operands:
//
//   request   a valid request built from the operands (method, path → handler mode and size, body
//             length, chunked or not, Connection: close, Expect: 100-continue, HTTP/1.0, Upgrade)
//   garbage   raw bytes from the input
//   deliver   the next 1..all queued client bytes arrive as one read
//   window    the client reads k more bytes (back-pressure), or everything from now on
//   half-close / reset   the client ends its input, or resets (writes fail)
//   stream write / finish / abort   on a streamed answer (waiting for acknowledgements, or not)
//   body read / body answer   on a body-reading handler
//   late answer (once, or twice)   from the script's thread, whatever happened meanwhile
//   interim   a 103 through an interim sender, possibly after its request was answered
//   deadline  the connection's deadline check at now + 1 s … 2 h
//   shutdown / force close   the server's graceful shutdown, or its final close
//
// After every event: no crash (ASan), no read or write after the transport was closed, no write
// after the output was shut down, the output so far a valid sequence of responses in request
// order with the bodies the handler gave (ResponseStreamChecker), no contract broken towards the
// handler (a body part after its end, a write acknowledged twice, ...). At the end: the client
// takes everything and half-closes, every handler obligation is met, deadlines pass; then the
// connection must have closed its transport, left the registry, and been deallocated.

/// epoll's event bits (sys/epoll.h), as the loop hands them to a member.
private let readEdge: UInt32 = 0x001, writeEdge: UInt32 = 0x004, errorEdge: UInt32 = 0x008, hangUpEdge: UInt32 = 0x010
private let peerClosedEdge: UInt32 = 0x2000

/// Reads the script.
private struct ScriptReader {
    let bytes: [UInt8]
    var at = 0
    var atEnd: Bool { at >= bytes.count }
    mutating func next() -> UInt8 {
        guard at < bytes.count else { return 0 }
        defer { at += 1 }
        return bytes[at]
    }
    mutating func take(_ n: Int) -> [UInt8] {
        let end = min(bytes.count, at + n)
        defer { at = end }
        return Array(bytes[at..<end])
    }
}

/// DCSERVE_FUZZ_VERBOSE=1: a line per run saying what it did (for checking seeds).
private let verbose = ProcessInfo.processInfo.environment["DCSERVE_FUZZ_VERBOSE"] == "1"

/// What a failure prints with DCSERVE_FUZZ_VERBOSE=1 (the run's output so far).
nonisolated(unsafe) private var failureContext: () -> String = { "" }

private func fuzzFail(_ text: String) -> Never {
    if verbose { FileHandle.standardError.write(Data(failureContext().utf8)) }
    FileHandle.standardError.write(Data("connection fuzz: \(text)\n".utf8))
    abort()
}

func fuzzConnection(_ bytes: [UInt8]) {
    var script = ScriptReader(bytes: bytes)
    let flags = script.next(), writeSelector = script.next(), windowSelector = script.next()

    var configuration = ServerConfiguration()
    configuration.eventLoopCount = 1
    // Far beyond a run's length: only the script's deadline checks can pass them.
    configuration.idleTimeout = .seconds(600)
    configuration.headerReadTimeout = .seconds(100)
    configuration.bodyReadTimeout = .seconds(300)
    configuration.writeTimeout = .seconds(300)
    configuration.lingerTimeout = .seconds(100)
    if flags & 1 != 0 { configuration.streamsRequestBody = { head in head.path?.hasPrefix("/b") ?? false } }
    let sendsFiles = flags & 2 != 0
    configuration.readChunkSize = [16, 64, 1024, 16 * 1024][Int(flags >> 2) & 3]
    if flags & 0x10 != 0 { configuration.writeHighWatermark = 4096 }
    if flags & 0x20 != 0 { configuration.maxRequestsPerConnection = 3 }
    if flags & 0x40 != 0 {
        configuration.limits.maxRequestLineBytes = 128
        configuration.limits.maxHeaderBytes = 256
        configuration.limits.maxBodyBytes = 4096
        configuration.limits.maxChunkLineBytes = 16
    }
    if flags & 0x80 != 0 { configuration.lingerMaxBytes = 100 }
    let bytesPerWrite = [Int.max, 1, 7, 100, 4096][Int(writeSelector) % 5]
    let window = [Int.max, 0, 10, 1000, 70_000][Int(windowSelector) % 5]

    let world = ConnectionFuzzWorld()
    var logger = Logger(label: "dcserve.fuzz.access")
    logger.logLevel = .critical
    let context = ServerContext(configuration: configuration, handler: ConnectionFuzzHandler(world: world), accessLog: AccessLog(logger: logger))
    let transport = InMemoryTransport(sendsFiles: sendsFiles, bytesPerWrite: bytesPerWrite, window: window, raisesEdges: false)
    var connection: Connection? = Connection(id: context.makeConnectionID(), transport: transport, remoteAddress: "127.0.0.1", context: context)
    weak var weakConnection = connection
    guard context.registry.add(connection!) else { fuzzFail("registry refused the connection") }
    let queue = connection!.queue
    let loop = connection!.loop
    connection!.start()

    var checker = ResponseStreamChecker()
    if verbose {
        failureContext = { [transport, world] in
            let text = String(decoding: transport.output.prefix(2000), as: UTF8.self) + " … " + String(decoding: transport.output.suffix(2000), as: UTF8.self)
            return "output (\(transport.output.count) bytes):\n\(text.debugDescription)\nrequests: \(world.requests.count) \(world.requests.suffix(2)), input left: \(transport.state.withLock { $0.input.map(\.count) }), ended: \(transport.state.withLock { $0.inputEnded })\n"
        }
    }
    var clientBytes: [UInt8] = []
    var lastOutputCount = 0

    /// Runs `body` with the connection on its loop's queue (nothing once it is gone).
    func onLoop(_ body: @escaping @Sendable (Connection) -> Void) {
        guard let c = connection else { return }
        queue.sync { body(c) }
    }

    func fingerprint() -> [Int] {
        let s = transport.state.withLock { s in [s.output.count, s.input.count, s.input.first?.count ?? 0, s.closed ? 1 : 0, s.writes, s.blockedWrites] }
        return s + [world.callbackCount, context.registry.count]
    }

    /// Lets the loop run until nothing changes for a few rounds (each round: everything queued on the
    /// loop before it has run — its task list, then its queue —, stream producers have been called).
    func settle() {
        var last = fingerprint()
        var stable = 0
        let barrier = DispatchSemaphore(value: 0)
        for _ in 0..<200_000 {
            loop.execute { barrier.signal() }  // the loop's tasks run in order: those queued before it have run
            barrier.wait()
            queue.sync {}
            while world.producersPending {
                if world.producerCalled.wait(timeout: .now() + .seconds(20)) == .timedOut { fuzzFail("a stream producer was never called") }
            }
            let now = fingerprint()
            if now == last { stable += 1; if stable >= 4 { return } } else { stable = 0; last = now }
        }
        fuzzFail("the connection never became quiet")
    }

    func checkInvariants(_ event: String) {
        let (output, closed, afterClose, afterShutdown) = transport.state.withLock { ($0.output, $0.closed, $0.usesAfterClose, $0.writesAfterShutdown) }
        if afterClose > 0 { fuzzFail("after \(event): \(afterClose) transport uses after close") }
        if afterShutdown > 0 { fuzzFail("after \(event): \(afterShutdown) writes after the output was shut down") }
        if output.count < lastOutputCount { fuzzFail("output shrank") }
        lastOutputCount = output.count
        if let problem = checker.check(output, world: world, closed: closed) { fuzzFail("after \(event): \(problem)") }
        if let problem = world.violation { fuzzFail("after \(event): \(problem)") }
    }

    func readable(_ mask: UInt32) { onLoop { $0.handleEvents(mask) } }

    var events = 0
    while !script.atEnd && events < 400 {
        events += 1
        let op = script.next()
        let name: String
        switch op % 20 {
        case 0, 1, 2:
            name = "request"
            clientBytes += makeRequest(&script)
        case 3:
            name = "garbage"
            clientBytes += script.take(Int(script.next() % 24))
        case 4, 5, 6, 7:
            name = "deliver"
            let n = [1, 2, 3, 7, 16, 64, 512, Int.max][Int(script.next()) % 8]
            // Nothing can follow the client's FIN (or reset) on a real connection.
            guard !clientBytes.isEmpty, !transport.state.withLock({ $0.inputEnded }) else { continue }
            let piece = Array(clientBytes.prefix(n))
            clientBytes.removeFirst(piece.count)
            transport.send(piece)
            readable(readEdge)
        case 8:
            name = "window"
            let k = [1, 10, 100, 5000, 100_000, Int.max][Int(script.next()) % 6]
            transport.allow(k)
            readable(writeEdge)
        case 9:
            name = "half-close"
            transport.endInput()
            readable(readEdge | peerClosedEdge)
        case 10:
            name = "reset"
            transport.reset()
            readable(readEdge | writeEdge | hangUpEdge | errorEdge)
        case 11, 12:
            name = "stream write"
            let pick = script.next()
            world.streamWrite(pick: pick, size: [1, 10, 100, 5000, 70_000][Int(script.next()) % 5])
        case 13:
            name = "stream end"
            let pick = script.next(), how = script.next()
            world.streamEnd(pick: pick, abort: how % 4 == 3, onlyAcknowledged: how & 4 == 0)
        case 14:
            name = "body read"
            world.bodyRead(pick: script.next())
        case 15:
            name = "body answer"
            world.bodyRespond(pick: script.next())
        case 16:
            name = "late answer"
            let pick = script.next()
            world.lateRespond(pick: pick, twice: pick & 0x80 != 0)
        case 17:
            name = "interim"
            world.interim(pick: script.next())
        case 18:
            name = "deadline"
            let seconds = [1, 11, 31, 61, 101, 301, 601, 7200][Int(script.next()) % 8]
            onLoop { $0.checkDeadline(DispatchTime.now() + .seconds(seconds)) }
        default:
            let how = script.next()
            if how & 7 == 7 {
                name = "force close"
                connection?.forceClose()
            } else {
                name = "shutdown"
                connection?.beginShutdown()
            }
        }
        settle()
        checkInvariants(name)
    }

    // The end: the client takes everything and sends what it has, every obligation is met, the client
    // half-closes and every deadline passes. The connection must then be gone.
    transport.allow(Int.max)
    if !clientBytes.isEmpty && !transport.state.withLock({ $0.inputEnded }) { transport.send(clientBytes) }
    clientBytes = []
    readable(readEdge | writeEdge)
    settle()
    checkInvariants("the client took everything")
    // Each round meets the obligations known so far; answering one request may dispatch the next
    // (pipelined), so rounds go on while anything changes (a bound for a hang, not a time limit).
    var quietRounds = 0
    for round in 0..<100_000 {
        let before = fingerprint()
        world.settleEverything()
        settle()
        transport.endInput()
        readable(readEdge | writeEdge | peerClosedEdge)
        settle()
        onLoop { $0.checkDeadline(DispatchTime.now() + .seconds(7200)) }
        settle()
        checkInvariants("the end, round \(round)")
        if transport.isClosed && context.registry.count == 0 { break }
        if fingerprint() == before { quietRounds += 1; if quietRounds == 8 { break } } else { quietRounds = 0 }
    }
    world.settleEverything()
    settle()
    checkInvariants("the end")
    guard transport.isClosed else { fuzzFail("the transport is still open at the end") }
    guard context.registry.count == 0 else { fuzzFail("the connection is still registered at the end") }
    if verbose {
        let output = transport.output.count
        FileHandle.standardError.write(Data("connection fuzz: \(events) events, \(world.requests.count) requests dispatched, \(checker.responses) responses checked (\(output) bytes)\(checker.switched ? ", switched" : "")\n".utf8))
    }
    world.clear()
    connection = nil
    settle()
    // Under heavy load a last reference can be dropped a moment after the loop went quiet, so a
    // leak is a connection still alive after a second of further settling.
    for _ in 0..<100 where weakConnection != nil {
        usleep(10_000)
        settle()
    }
    if weakConnection != nil { fuzzFail("the connection was not deallocated at the end") }
}

/// A request built from the script: method, handler mode and size, body, framing and options.
private func makeRequest(_ script: inout ScriptReader) -> [UInt8] {
    let a = script.next(), b = script.next(), c = script.next()
    let method = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS"][Int(a) % 6]
    let modes: [Character] = ["f", "h", "s", "b", "l", "i", "u", "x"]
    let mode = modes[Int(a >> 3) % modes.count]
    let sizeSelector = Character(UnicodeScalar(UInt8(ascii: "0") + b % 8))
    let http10 = a & 0xC0 == 0xC0
    let bodyLength = method == "GET" || method == "HEAD" ? 0 : [0, 1, 5, 100, 1000, 20_000][Int(c) % 6]
    let chunked = c & 0x10 != 0 && bodyLength > 0 && !http10
    var head = "\(method) /\(mode)\(sizeSelector)?q=\(b) HTTP/1.\(http10 ? 0 : 1)\r\nHost: fuzz\r\n"
    if c & 0x20 != 0 { head += "Connection: close\r\n" }
    if c & 0x40 != 0 && bodyLength > 0 { head += "Expect: 100-continue\r\n" }
    if c & 0x80 != 0 || mode == "u" && b & 0x80 == 0 { head += "Upgrade: fuzz\r\nConnection: upgrade\r\n" }
    if http10 && b & 0x40 != 0 { head += "Connection: keep-alive\r\n" }
    let body = (0..<bodyLength).map { UInt8(truncatingIfNeeded: $0 &* 11 &+ Int(b)) }
    if chunked {
        head += "Transfer-Encoding: chunked\r\n\r\n"
        var out = Array(head.utf8)
        var at = 0, size = Int(b % 17) + 1
        while at < body.count {
            let n = min(size, body.count - at)
            out += Array("\(String(n, radix: 16))\r\n".utf8) + body[at..<at + n] + Array("\r\n".utf8)
            at += n
            size = size * 3 % 4093 + 1
        }
        return out + Array("0\r\n\r\n".utf8)
    }
    if bodyLength > 0 || method == "POST" { head += "Content-Length: \(bodyLength)\r\n" }
    return Array((head + "\r\n").utf8) + body
}
