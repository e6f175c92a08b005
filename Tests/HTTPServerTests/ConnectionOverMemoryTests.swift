#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ByteTransportTesting
@testable import HTTPServer
import Locking

/// The connection glue (reads, parsing across reads, dispatch, the output queue, back-pressure, the
/// end of a connection, deadlines) driven through an `InMemoryTransport` on a real event loop.
@Suite struct ConnectionOverMemoryTests {
    /// Answers "METHOD PATH body-length body-checksum"; `/big` with `bigBody`, `/file` with the
    /// file at `filePath`.
    struct EchoHandler: HTTPHandler {
        static let bigBody: [UInt8] = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        var filePath: String?

        func handle(_ request: HTTPServerRequest, respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
            switch request.pathWithoutQuery {
            case "/big":
                respond(HTTPServerResponse(status: .ok, body: .bytes(Self.bigBody)))
            case "/file":
                do {
                    respond(HTTPServerResponse(status: .ok, body: .file(FileBody(file: try OpenFile(path: filePath ?? "")))))
                } catch {
                    respond(.text(.internalServerError, "\(error)"))
                }
            default:
                respond(HTTPServerResponse(status: .ok, body: .bytes(Array(
                    Self.summary(request.head.method.rawValue, String(request.pathWithoutQuery), request.body).utf8))))
            }
        }

        static func summary(_ method: String, _ path: String, _ body: [UInt8]) -> String {
            "\(method) \(path) \(body.count) \(body.reduce(0) { $0 &+ Int($1) })"
        }
    }

    // MARK: Pipelining and splits

    static let pipelined = Array((
        "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
            + "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
            + "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
            + "GET /d?q=1 HTTP/1.1\r\nHost: x\r\n\r\n"
    ).utf8)
    static let pipelinedAnswers = [
        EchoHandler.summary("GET", "/a", []), EchoHandler.summary("POST", "/b", Array("hello".utf8)),
        EchoHandler.summary("POST", "/c", Array("abcde".utf8)), EchoHandler.summary("GET", "/d", []),
    ]

    @Test func pipelinedRequestsSplitAtEveryByteAreAnsweredInOrder() {
        let harness = ConnectionHarness(handler: EchoHandler())
        let bytes = Self.pipelined
        for split in 1..<bytes.count {
            let transport = InMemoryTransport()
            _ = harness.connect(transport)
            transport.send(Array(bytes[..<split]))
            transport.send(Array(bytes[split...]))
            let responses = ParsedResponses.wait(for: Self.pipelinedAnswers.count, on: transport)
            #expect(responses.map(\.text) == Self.pipelinedAnswers, "split at \(split)")
            #expect(responses.allSatisfy { $0.status == 200 })
            transport.endInput()
        }
        #expect(harness.waitUntilAllClosed())
    }

    @Test func pipelinedRequestsSentOneByteAtATimeAreAnsweredInOrder() {
        let harness = ConnectionHarness(handler: EchoHandler())
        let transport = InMemoryTransport()
        _ = harness.connect(transport)
        for byte in Self.pipelined { transport.send([byte]) }
        #expect(ParsedResponses.wait(for: Self.pipelinedAnswers.count, on: transport).map(\.text) == Self.pipelinedAnswers)
        transport.endInput()
        #expect(harness.waitUntilAllClosed())
    }

    // MARK: Request bodies in pieces

    /// `bytes` sent in pieces of 1 to 13 bytes, their sizes drawn from `seed`.
    static func sendInPieces(_ bytes: [UInt8], to transport: InMemoryTransport, seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var at = 0
        while at < bytes.count {
            let n = min(Int.random(in: 1...13, using: &rng), bytes.count - at)
            transport.send(Array(bytes[at..<at + n]))
            at += n
        }
    }

    static func randomBody(_ count: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
    }

    @Test(arguments: [false, true])
    func aRequestBodyInManySmallPiecesArrivesWhole(chunked: Bool) {
        let harness = ConnectionHarness(handler: EchoHandler())
        let body = Self.randomBody(10_000, seed: 35)
        var request = Array("PUT /upload HTTP/1.1\r\nHost: x\r\n".utf8)
        if chunked {
            request += Array("Transfer-Encoding: chunked\r\n\r\n".utf8)
            var at = 0, size = 1
            while at < body.count {
                let n = min(size, body.count - at)
                request += Array("\(String(n, radix: 16))\r\n".utf8) + body[at..<at + n] + Array("\r\n".utf8)
                at += n
                size = size * 3 % 1021 + 1
            }
            request += Array("0\r\n\r\n".utf8)
        } else {
            request += Array("Content-Length: \(body.count)\r\n\r\n".utf8) + body
        }
        let transport = InMemoryTransport()
        _ = harness.connect(transport)
        Self.sendInPieces(request, to: transport, seed: chunked ? 2 : 1)
        let responses = ParsedResponses.wait(for: 1, on: transport)
        #expect(responses.map(\.text) == [EchoHandler.summary("PUT", "/upload", body)])
        transport.endInput()
        #expect(harness.waitUntilAllClosed())
    }

    /// A streamed request body (`RequestBodyStream`) read part by part while it arrives in pieces.
    @Test func aStreamedRequestBodyInManySmallPiecesArrivesWhole() {
        struct StreamSum: HTTPHandler {
            func handle(_ request: HTTPServerRequest, respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
                guard let stream = request.bodyStream else { return respond(.text(.badRequest, "not streamed")) }
                let received = Locked<[UInt8]>([])
                @Sendable func next() {
                    stream.read { part in
                        switch part {
                        case .bytes(let b): received.withLock { $0 += b }; next()
                        case .end:
                            let summary = EchoHandler.summary("PUT", "/up", received.withLock { $0 })
                            respond(HTTPServerResponse(status: .ok, body: .bytes(Array(summary.utf8))))
                        case .failed(let error): respond(.text(.badRequest, "\(error)"))
                        }
                    }
                }
                next()
            }
        }
        let harness = ConnectionHarness(handler: StreamSum()) { $0.streamsRequestBody = { _ in true } }
        let body = Self.randomBody(20_000, seed: 7)
        let transport = InMemoryTransport()
        _ = harness.connect(transport)
        Self.sendInPieces(Array("PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body,
                          to: transport, seed: 3)
        #expect(ParsedResponses.wait(for: 1, on: transport).map(\.text) == [EchoHandler.summary("PUT", "/up", body)])
        transport.endInput()
        #expect(harness.waitUntilAllClosed())
    }

    // MARK: The client going away

    @Test func aClientThatClosesMidResponseEndsTheStreamAndTheConnection() {
        let stopped = Locked<(written: Int, sawCancel: Bool)>((0, false))
        let harness = ConnectionHarness(handler: ClosureHandler { _, respond in
            respond(HTTPServerResponse(status: .ok, body: .stream(StreamBody { writer in
                @Sendable func next(_ i: Int) {
                    if writer.isCancelled { stopped.withLock { $0.sawCancel = true }; return }
                    if i == 1000 { writer.finish(); return }
                    stopped.withLock { $0.written = i }
                    writer.write([UInt8](repeating: UInt8(i & 0xFF), count: 16 << 10)) { next(i + 1) }
                }
                next(0)
            })))
        })
        let transport = InMemoryTransport(window: 40_000)
        _ = harness.connect(transport)
        transport.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(transport.wait { $0.blockedWrites > 0 })
        transport.reset()
        #expect(harness.waitUntilAllClosed())
        #expect(transport.isClosed)
        // The producer hears of it: its next write is refused at once (no queue hop), and it stops
        // long before the end of the 16 MB body.
        var rounds = 0
        while !stopped.withLock({ $0.sawCancel }) && rounds < 10_000 { usleep(1000); rounds += 1 }
        let end = stopped.withLock { $0 }
        #expect(end.sawCancel)
        #expect(end.written < 999)
    }

    /// A streamed answer to HEAD sends no body, but its producer still gets its one call, with a
    /// writer cancelled from the start (so a producer holding an upstream exchange can release it);
    /// what it writes is dropped and its `then` still runs.
    @Test func aStreamProducerAnsweringHeadIsCalledWithACancelledWriter() {
        let seen = Locked<(cancelled: Bool?, acknowledged: Bool)>((nil, false))
        let harness = ConnectionHarness(handler: ClosureHandler { _, respond in
            respond(HTTPServerResponse(status: .ok, body: .stream(StreamBody { writer in
                seen.withLock { $0.cancelled = writer.isCancelled }
                writer.write([1, 2, 3]) {
                    seen.withLock { $0.acknowledged = true }
                    writer.finish()
                }
            })))
        })
        let transport = InMemoryTransport()
        _ = harness.connect(transport)
        transport.send("HEAD /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        var rounds = 0
        while !seen.withLock({ $0.acknowledged }) && rounds < 10_000 { usleep(1000); rounds += 1 }
        #expect(seen.withLock { $0.cancelled } == true, "the producer was not called, or with a live writer")
        #expect(seen.withLock { $0.acknowledged })
        let head = String(decoding: transport.waitForOutput(count: 1), as: UTF8.self)
        #expect(head.hasPrefix("HTTP/1.1 200 "))
        #expect(head.hasSuffix("\r\n\r\n"), "bytes after the head: \(head.debugDescription)")
        transport.endInput()
        #expect(harness.waitUntilAllClosed())
    }

    /// A handler that calls `respond` twice (a bug, or a late callback racing another) answers only
    /// its own request: the second call is dropped even when the next request waits for its answer.
    @Test func aSecondRespondNeverAnswersTheNextRequest() {
        typealias Respond = @Sendable (consuming HTTPServerResponse) -> Void
        let responders = Locked<[Respond]>([])
        let harness = ConnectionHarness(handler: ClosureHandler { _, respond in responders.withLock { $0.append(respond) } })
        let transport = InMemoryTransport()
        _ = harness.connect(transport)
        func responder(_ i: Int) -> Respond? {
            var rounds = 0
            while responders.withLock({ $0.count }) <= i && rounds < 10_000 { usleep(1000); rounds += 1 }
            return responders.withLock { $0.count > i ? $0[i] : nil }
        }
        transport.send("GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n")
        guard let first = responder(0) else { Issue.record("the first request was not dispatched"); return }
        first(.text(.ok, "first"))
        first(.text(.ok, "first again"))
        guard let second = responder(1) else { Issue.record("the second request was not dispatched"); return }
        second(.text(.ok, "second"))
        #expect(ParsedResponses.wait(for: 2, on: transport).map(\.text) == ["first\n", "second\n"])
        transport.endInput()
        #expect(harness.waitUntilAllClosed())
    }

    /// A streamed answer that arrives after its connection closed (the server's final close at
    /// shutdown) is not sent, but its producer still gets its one call, with a cancelled writer.
    @Test func aStreamAnsweringAfterTheConnectionClosedStillCallsItsProducer() {
        let respondLater = Locked<(@Sendable (consuming HTTPServerResponse) -> Void)?>(nil)
        let cancelled = Locked<Bool?>(nil)
        let harness = ConnectionHarness(handler: ClosureHandler { _, respond in respondLater.withLock { $0 = respond } })
        let transport = InMemoryTransport()
        let connection = harness.connect(transport)
        transport.send("GET /late HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(transport.wait { _ in respondLater.withLock { $0 != nil } })
        connection.forceClose()
        #expect(harness.waitUntilAllClosed())
        respondLater.withLock { $0 }?(HTTPServerResponse(status: .ok, body: .stream(StreamBody { writer in
            cancelled.withLock { $0 = writer.isCancelled }
            writer.finish()
        })))
        #expect(transport.wait { _ in cancelled.withLock { $0 != nil } }, "the producer was never called")
        #expect(cancelled.withLock { $0 } == true)
        #expect(transport.output.isEmpty)
    }

    @Test func aClientThatClosesMidBodyClosesTheConnection() {
        let harness = ConnectionHarness(handler: EchoHandler())
        let transport = InMemoryTransport(window: 10_000)
        _ = harness.connect(transport)
        transport.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\nGET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(transport.wait { $0.blockedWrites > 0 })
        transport.reset()
        #expect(harness.waitUntilAllClosed())
        #expect(transport.isClosed)
        #expect(transport.output.count == 10_000)
    }

    // MARK: Back-pressure

    /// A 100 KB in-memory body, a 200 KB file and a small answer, pipelined, through a transport that
    /// takes 7 bytes per write and 4 KiB per writable edge: every byte arrives, in order. With
    /// `sendsFiles: false` the file is staged through the buffer (the TLS path).
    @Test(arguments: [true, false])
    func writeBackPressureDeliversEveryByteInOrder(sendsFiles: Bool) {
        let directory = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let fileBytes = Self.randomBody(200_000, seed: 11)
        let path = directory + "/file.bin"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(fileBytes)))
        let harness = ConnectionHarness(handler: EchoHandler(filePath: path))
        let transport = InMemoryTransport(sendsFiles: sendsFiles, bytesPerWrite: 7, window: 4096)
        _ = harness.connect(transport)
        transport.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\nGET /file HTTP/1.1\r\nHost: x\r\n\r\nGET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        var responses: [ParsedResponses.Response] = []
        for _ in 0..<200 {
            // Each round: wait until the connection is blocked on a full window, then open it a bit.
            transport.wait { $0.blockedWrites > 0 && $0.window == 0 || ParsedResponses.parse($0.output).count == 3 }
            responses = ParsedResponses.parse(transport.output)
            if responses.count == 3 { break }
            transport.allow(4096)
        }
        #expect(responses.count == 3)
        guard responses.count == 3 else { return }
        #expect(responses[0].body.elementsEqual(EchoHandler.bigBody), "the in-memory body differs")
        #expect(responses[1].body.elementsEqual(fileBytes), "the file body differs")
        #expect(responses[2].text == EchoHandler.summary("GET", "/a", []))
        #expect(transport.state.withLock { $0.writes } > 300_000 / 7)
        transport.endInput()
        #expect(harness.waitUntilAllClosed())
    }

    /// A client that pipelines without reading: once a high watermark of responses is queued the
    /// connection stops reading (its input stays with the peer), and resumes as the output drains.
    @Test func aClientThatDoesNotReadIsNotReadFromEither() {
        let harness = ConnectionHarness(handler: EchoHandler())
        let transport = InMemoryTransport(window: 0)
        _ = harness.connect(transport)
        for _ in 0..<20 { transport.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n") }
        #expect(transport.wait { $0.blockedWrites > 0 })
        // Let the loop settle: a read left to do would run in the blocks queued behind this one.
        for _ in 0..<3 { harness.onLoop(harness.context.registry.all[0]) {} }
        let unread = transport.state.withLock { $0.input.count }
        // 256 KiB of responses are three 100 KB bodies: the rest of the requests are not read.
        #expect(unread >= 20 - 4)
        transport.allow(Int.max / 2)
        let responses = ParsedResponses.wait(for: 20, on: transport)
        #expect(responses.count == 20)
        #expect(responses.allSatisfy { $0.body == EchoHandler.bigBody }, "a body differs")
        transport.endInput()
        #expect(harness.waitUntilAllClosed())
    }

    // MARK: Deadlines, driven by the test

    /// `writeTimeout` bounds the time between two pieces of write progress, not the whole response:
    /// a slow client that keeps taking a large file (sendfile, or staged through the buffer) keeps
    /// its connection. The deadline is checked at a time that only a deadline restarted by the last
    /// progress has not reached.
    @Test(arguments: [true, false])
    func writeProgressOnAFileRestartsTheWriteDeadline(sendsFiles: Bool) {
        let directory = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let fileBytes = Self.randomBody(1 << 20, seed: 5)
        let path = directory + "/large.bin"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(fileBytes)))
        let harness = ConnectionHarness(handler: EchoHandler(filePath: path))
        let transport = InMemoryTransport(sendsFiles: sendsFiles, window: 64 << 10)
        let connection = harness.connect(transport)
        transport.send("GET /file HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(transport.wait { $0.blockedWrites > 0 })
        // The first wait for writability (and its write deadline) is at least this long ago when
        // the client takes more.
        usleep(300_000)
        let progress = DispatchTime.now()
        let blocked = transport.state.withLock { $0.blockedWrites }
        transport.allow(64 << 10)
        #expect(transport.wait { $0.blockedWrites > blocked })
        let writeTimeout = harness.context.configuration.writeTimeout
        harness.onLoop(connection) {
            connection.checkDeadline(progress + .nanoseconds(Int(writeTimeout.nanoseconds)) - .milliseconds(100))
        }
        #expect(!transport.isClosed)
        transport.allow(Int.max / 2)
        let responses = ParsedResponses.wait(for: 1, on: transport)
        #expect(responses.first.map { $0.body == fileBytes } == true, "\(responses.first?.body.count ?? -1) of \(fileBytes.count) bytes")
        transport.endInput()
        #expect(harness.waitUntilAllClosed())
    }


    @Test func anIncompleteHeadGets408AtItsDeadlineAndNotBefore() {
        let harness = ConnectionHarness(handler: EchoHandler())
        let transport = InMemoryTransport()
        let connection = harness.connect(transport)
        transport.send("GET / HTTP/1.1\r\nHo")
        #expect(transport.wait { $0.input.isEmpty })
        let start = DispatchTime.now()
        harness.onLoop(connection) { connection.checkDeadline(start + .seconds(9)) }
        #expect(transport.output.isEmpty)
        #expect(!transport.isClosed)
        harness.onLoop(connection) { connection.checkDeadline(start + .seconds(11)) }
        let responses = ParsedResponses.wait(for: 1, on: transport)
        #expect(responses.map(\.status) == [408])
        transport.endInput()
        #expect(harness.waitUntilAllClosed())
    }

    @Test func anIdleConnectionClosesAtItsDeadlineAndNotBefore() {
        let harness = ConnectionHarness(handler: EchoHandler())
        let transport = InMemoryTransport()
        let connection = harness.connect(transport)
        transport.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(ParsedResponses.wait(for: 1, on: transport).count == 1)
        let start = DispatchTime.now()
        harness.onLoop(connection) { connection.checkDeadline(start + .seconds(59)) }
        #expect(!transport.isClosed)
        harness.onLoop(connection) { connection.checkDeadline(start + .seconds(61)) }
        #expect(harness.waitUntilAllClosed())
        #expect(transport.isClosed)
        #expect(ParsedResponses.parse(transport.output).count == 1)
    }
}

/// A minimal reader of the responses a connection wrote (Content-Length and chunked framing), for
/// checking order and bytes.
enum ParsedResponses {
    struct Response {
        var status: Int
        var fields: [(String, String)]
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// Every complete response at the start of `bytes`.
    static func parse(_ bytes: [UInt8]) -> [Response] {
        var responses: [Response] = []
        var at = 0
        while let response = parseOne(bytes, from: &at) { responses.append(response) }
        return responses
    }

    /// Waits until `count` complete responses were written (or the bound passed); returns them.
    static func wait(for count: Int, on transport: InMemoryTransport) -> [Response] {
        transport.wait { parse($0.output).count >= count }
        return parse(transport.output)
    }

    private static func parseOne(_ bytes: [UInt8], from at: inout Int) -> Response? {
        let crlf: [UInt8] = [13, 10]
        guard let headEnd = firstIndex(of: [13, 10, 13, 10], in: bytes, from: at) else { return nil }
        let lines = String(decoding: bytes[at..<headEnd], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { return nil }
        var fields: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields.append((line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        var cursor = headEnd + 4
        var body: [UInt8] = []
        if fields.contains(where: { $0.0 == "transfer-encoding" && $0.1.lowercased() == "chunked" }) {
            while true {
                guard let lineEnd = firstIndex(of: crlf, in: bytes, from: cursor),
                      let size = Int(String(decoding: bytes[cursor..<lineEnd], as: UTF8.self), radix: 16) else { return nil }
                cursor = lineEnd + 2
                if size == 0 {
                    guard cursor + 2 <= bytes.count else { return nil }
                    cursor += 2
                    break
                }
                guard cursor + size + 2 <= bytes.count else { return nil }
                body += bytes[cursor..<cursor + size]
                cursor += size + 2
            }
        } else {
            let length = fields.first { $0.0 == "content-length" }.flatMap { Int($0.1) } ?? 0
            guard cursor + length <= bytes.count else { return nil }
            body = Array(bytes[cursor..<cursor + length])
            cursor += length
        }
        at = cursor
        return Response(status: status, fields: fields, body: body)
    }
}
