@testable import DCServe
import DictionaryCodec
import HTTPClient
import HTTPCore
import HTTPServer
import HTTPTypes
import Logging
import Synchronization
import Testing
import TestSupport
import Locking

/// A stream sink that holds each write's acknowledgement until the test releases it (a client that
/// reads only when told to).
final class HeldWriter: ResponseBodyWriter, @unchecked Sendable {
    private let state = Locked<(bytes: [UInt8], held: [@Sendable () -> Void], finished: Bool, aborted: Bool)>(([], [], false, false))
    var isCancelled: Bool { false }
    func write(_ chunk: [UInt8], then: @escaping @Sendable () -> Void) {
        state.withLock { $0.bytes += chunk; $0.held.append(then) }
    }
    func finish() { state.withLock { $0.finished = true } }
    func abort() { state.withLock { $0.aborted = true } }
    /// Acknowledges every held write (in order); returns how many.
    @discardableResult func release() -> Int {
        let held = state.withLock { s in defer { s.held = [] }; return s.held }
        held.forEach { $0() }
        return held.count
    }
    var snapshot: (bytes: [UInt8], held: Int, finished: Bool, aborted: Bool) {
        state.withLock { ($0.bytes, $0.held.count, $0.finished, $0.aborted) }
    }
}

/// The relay between the upstream client's delegate calls and the server's response: buffering,
/// streaming with back-pressure, decoding, failures.
@Suite struct ProxyResponseRelayTests {
    final class Answers: Sendable {
        let responses = Locked<[HTTPServerResponse]>([])
        var all: [HTTPServerResponse] { responses.withLock { $0 } }
        var respond: @Sendable (consuming HTTPServerResponse) -> Void { { r in self.responses.withLock { $0.append(r) } } }
    }

    static func relay(method: HTTPRequest.Method = .get, maxBuffered: Int = 1000) -> (ProxyResponseRelay, Answers) {
        let answers = Answers()
        let relay = ProxyResponseRelay(
            settings: .init(upstream: "api", maxBufferedBodyBytes: maxBuffered, maxDecodedBodyBytes: 1 << 20, policy: ProxyHeaderPolicy(),
                            logger: Logger(label: "test")),
            request: testRequest(method, "/x", authority: "a"), respond: answers.respond)
        return (relay, answers)
    }

    static let server = UpstreamServer(host: "127.0.0.1", port: 9)

    @Test func smallBodyIsBufferedAndCleaned() throws {
        let (relay, answers) = Self.relay()
        relay.didReceiveHead(HTTPResponse(status: .ok, headerFields: [.connection: "X-Hop", HTTPField.Name("X-Hop")!: "1",
                                                                      .contentType: "text/plain"]), bodyLength: .known(10))
        #expect(answers.all.isEmpty, "nothing before the body is complete")
        let resumed = Atomic<Int>(0)
        relay.didReceiveBodyPart(Array("hello ".utf8)[...]) { resumed.add(1, ordering: .relaxed) }
        relay.didReceiveBodyPart(Array("world".utf8)[...]) { resumed.add(1, ordering: .relaxed) }
        relay.didFinish(trailers: nil)
        #expect(resumed.load(ordering: .relaxed) == 2)
        let response = try #require(answers.all.first)
        #expect(answers.all.count == 1)
        guard case .bytes(let body) = response.body else { Issue.record("not bytes"); return }
        #expect(body == Array("hello world".utf8))
        #expect(response.head.headerFields[HTTPField.Name("X-Hop")!] == nil)
        #expect(response.head.headerFields[HTTPField.Name("Via")!] == "1.1 dcserve")
    }

    @Test func gzipBodyIsDecodedForTheMiddleware() throws {
        let identity = Array(String(repeating: "{\"a\":1}", count: 50).utf8)
        let gz = try ContentCoding.gzip.encode(identity, level: 6)
        let (relay, answers) = Self.relay()
        relay.didReceiveHead(HTTPResponse(status: .ok, headerFields: [.contentEncoding: "gzip", .eTag: "\"e\""]),
                             bodyLength: .known(gz.count))
        relay.didReceiveBodyPart(gz[...]) {}
        relay.didFinish(trailers: nil)
        let response = try #require(answers.all.first)
        guard case .bytes(let body) = response.body else { Issue.record("not bytes"); return }
        #expect(body == identity)
        #expect(response.head.headerFields[.contentEncoding] == nil)
        #expect(response.head.headerFields[.eTag] == "\"e-identity\"")
    }

    @Test func largeBodyStreamsWithBackPressure() throws {
        let (relay, answers) = Self.relay(maxBuffered: 100)
        relay.didReceiveHead(HTTPResponse(status: .ok), bodyLength: .known(300))
        let response = try #require(answers.all.first, "a stream answers at the head")
        guard case .stream(let body) = response.body else { Issue.record("not a stream"); return }
        let writer = HeldWriter()
        body.produce(writer)
        let resumed = Atomic<Int>(0)
        for i in 0..<3 {
            relay.didReceiveBodyPart([UInt8](repeating: UInt8(i), count: 100)[...]) { resumed.add(1, ordering: .relaxed) }
            #expect(resumed.load(ordering: .relaxed) == i, "the upstream waits while the client has not taken part \(i)")
            #expect(writer.release() == 1)
            #expect(resumed.load(ordering: .relaxed) == i + 1)
        }
        relay.didFinish(trailers: nil)
        let s = writer.snapshot
        #expect(s.finished && !s.aborted)
        #expect(s.bytes == (0..<3).flatMap { [UInt8](repeating: UInt8($0), count: 100) })
    }

    @Test func chunkedBodyOutgrowingTheBufferSwitchesToStreaming() throws {
        let (relay, answers) = Self.relay(maxBuffered: 250)
        relay.didReceiveHead(HTTPResponse(status: .ok, headerFields: [.contentType: "application/json"]), bodyLength: .chunked)
        let resumed = Atomic<Int>(0)
        for i in 0..<2 { relay.didReceiveBodyPart([UInt8](repeating: UInt8(i), count: 100)[...]) { resumed.add(1, ordering: .relaxed) } }
        #expect(answers.all.isEmpty && resumed.load(ordering: .relaxed) == 2, "buffered so far")
        relay.didReceiveBodyPart([UInt8](repeating: 2, count: 100)[...]) { resumed.add(1, ordering: .relaxed) }
        let response = try #require(answers.all.first)
        guard case .stream(let body) = response.body else { Issue.record("not a stream"); return }
        #expect(resumed.load(ordering: .relaxed) == 2, "not resumed before the buffered bytes were taken")
        let writer = HeldWriter()
        body.produce(writer)
        while writer.release() > 0 {}
        #expect(resumed.load(ordering: .relaxed) == 3)
        relay.didReceiveBodyPart([UInt8](repeating: 3, count: 50)[...]) { resumed.add(1, ordering: .relaxed) }
        relay.didFinish(trailers: nil)
        while writer.release() > 0 {}
        let s = writer.snapshot
        #expect(s.finished)
        #expect(s.bytes == (0..<3).flatMap { [UInt8](repeating: UInt8($0), count: 100) } + [UInt8](repeating: 3, count: 50))
    }

    @Test(arguments: [
        (HTTPClientError.connectFailed(server: server, errno: 111), 502),
        (.timedOut(server: server, phase: "read"), 504),
        (.invalidResponse(server: server, reason: "bad status line"), 502),
        (.closedEarly(server: server), 502),
        (.noServerAvailable, 502),
    ])
    func failureBeforeTheAnswer(error: HTTPClientError, status: Int) throws {
        let (relay, answers) = Self.relay()
        relay.didFail(error)
        let response = try #require(answers.all.first)
        #expect(response.head.status.code == status)
        guard case .bytes(let body) = response.body else { Issue.record("not bytes"); return }
        #expect(String(decoding: body, as: UTF8.self).contains("upstream api"))
        #expect(!String(decoding: body, as: UTF8.self).contains("127.0.0.1"), "the upstream's address stays in the log")
    }

    @Test func failureWhileBufferingIs502() throws {
        let (relay, answers) = Self.relay()
        relay.didReceiveHead(HTTPResponse(status: .ok), bodyLength: .known(500))
        relay.didReceiveBodyPart([UInt8](repeating: 1, count: 200)[...]) {}
        relay.didFail(.closedEarly(server: Self.server))
        #expect(answers.all.map(\.head.status.code) == [502])
    }

    @Test func failureWhileStreamingAbortsTheClientResponse() throws {
        let (relay, answers) = Self.relay(maxBuffered: 10)
        relay.didReceiveHead(HTTPResponse(status: .ok), bodyLength: .known(500))
        guard case .stream(let body) = try #require(answers.all.first).body else { Issue.record("not a stream"); return }
        let writer = HeldWriter()
        body.produce(writer)
        relay.didReceiveBodyPart([UInt8](repeating: 1, count: 200)[...]) {}
        relay.didFail(.closedEarly(server: Self.server))
        #expect(!writer.snapshot.aborted, "the written part goes first")
        writer.release()
        #expect(writer.snapshot.aborted && !writer.snapshot.finished)
        #expect(answers.all.count == 1)
    }

    @Test func aFailedRequestBodyIsAnswered() throws {
        let (relay, answers) = Self.relay(method: .post)
        relay.didFail(.cancelled)  // the client's streamed body failed: the client cancelled the exchange
        #expect(answers.all.map(\.head.status.code) == [400])
    }

    @Test func bodylessResponsesAnswerAtTheHead() throws {
        let (relay, answers) = Self.relay(method: .head)
        relay.didReceiveHead(HTTPResponse(status: .ok, headerFields: [.contentLength: "1234"]), bodyLength: .none)
        let response = try #require(answers.all.first)
        #expect(response.body.knownLength == 0)
    }
}
