#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import HTTPClient
import HTTPCore
import HTTPTypes
import Synchronization
import Testing
import Locking

/// Answers every request on the connection with 200 and the request's path as the body, keep-alive,
/// until the client closes.
@Sendable func echoPathHandler(_ connection: TestUpstreamConnection, _ index: Int) {
    while let request = connection.readRequest() {
        let path = request.head.split(separator: " ").dropFirst().first.map(String.init) ?? "?"
        let body = "\(path) on \(index) body \(request.body.count)"
        guard connection.write("HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)") else { return }
    }
}

func makeClient(ports: [Int], _ configure: (inout HTTPClientConfiguration) -> Void = { _ in }) -> (HTTPClient, EventLoop, EventLoopGroup) {
    var configuration = HTTPClientConfiguration(servers: ports.map { UpstreamServer(host: "127.0.0.1", port: $0) })
    configuration.connectTimeout = .seconds(5)
    configuration.readTimeout = .seconds(10)
    configuration.sendTimeout = .seconds(10)
    configure(&configuration)
    let group = EventLoopGroup(count: 1, sweepInterval: .milliseconds(50))
    return (HTTPClient(configuration: configuration, loops: group), group.loops[0], group)
}

func request(_ path: String, method: HTTPRequest.Method = .get, fields: HTTPFields = [:],
             body: HTTPClientRequestBody = .none) -> HTTPClientRequest {
    HTTPClientRequest(head: HTTPRequest(method: method, scheme: "http", authority: "example.test", path: path,
                                        headerFields: fields), body: body)
}

/// Runs one exchange to its end (bounded wait) and returns what the delegate saw.
func run(_ client: HTTPClient, _ req: HTTPClientRequest, on loop: EventLoop,
         delegate: CollectingDelegate = CollectingDelegate()) -> CollectingDelegate.Record {
    client.execute(req, on: loop, delegate: delegate)
    #expect(delegate.wait(), "exchange did not end")
    let record = delegate.snapshot
    #expect(record.callbacksAfterEnd == 0)
    return record
}

func bodyText(_ record: CollectingDelegate.Record) -> String { String(decoding: record.body, as: UTF8.self) }

/// Waits (bounded) until `condition` holds; returns whether it did.
func eventually(seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let end = Date().addingTimeInterval(seconds)
    while Date() < end {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}

@Suite("HTTPClient against real sockets: pool, retry, timeouts, errors, back-pressure, cancel, round robin",
       .serialized)
struct HTTPClientTests {
    @Test func keepAliveConnectionIsReused() {
        let upstream = TestUpstream(handler: echoPathHandler)
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port])
        for i in 0..<5 {
            let r = run(client, request("/r\(i)"), on: loop)
            #expect(r.error == nil)
            #expect(r.head?.status == .ok)
            #expect(bodyText(r) == "/r\(i) on 0 body 0")
        }
        #expect(upstream.acceptedConnections == 1)
        #expect(loop.queue.sync { client.idleConnectionCount(on: loop) } == 1)
        client.closeIdleConnections()
    }

    @Test func requestHeadCarriesHostAndFramingAndNeutralisesInjection() {
        let heads = Locked<[String]>([])
        let upstream = TestUpstream { connection, _ in
            while let request = connection.readRequest() {
                heads.withLock { $0.append(request.head + "|" + String(decoding: request.body, as: UTF8.self)) }
                connection.write("HTTP/1.1 204 No Content\r\n\r\n")
            }
        }
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port])
        var fields = HTTPFields()
        fields[.contentLength] = "999"
        fields[.init("X-Evil")!] = "a\r\nInjected: yes"
        fields[.connection] = "close"
        let r = run(client, request("/a b", method: .post, fields: fields, body: .bytes(Array("hello".utf8))), on: loop)
        #expect(r.error == nil && r.head?.status == .noContent)
        let head = heads.withLock { $0.first } ?? ""
        #expect(head.hasPrefix("POST /a%20b HTTP/1.1\r\n"))
        #expect(head.contains("\r\nHost: example.test"))
        #expect(head.contains("\r\nContent-Length: 5"))
        #expect(!head.contains("999"))
        #expect(!head.lowercased().contains("\r\nconnection:"))
        #expect(!head.contains("\r\nInjected"))
        #expect(head.hasSuffix("|hello"))
        client.closeIdleConnections()
    }

    @Test func deadReusedConnectionIsRetriedForIdempotentRequestsOnly() {
        // Connection 0 answers one request, then reads the next and closes without an answer.
        let handler: @Sendable (TestUpstreamConnection, Int) -> Void = { connection, index in
            if index == 0 {
                guard connection.readRequest() != nil else { return }
                connection.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                _ = connection.readRequest()
                return
            }
            echoPathHandler(connection, index)
        }
        let getUpstream = TestUpstream(handler: handler)
        defer { getUpstream.stop() }
        let (client, loop, _) = makeClient(ports: [getUpstream.port])
        #expect(run(client, request("/first"), on: loop).error == nil)
        let retried = run(client, request("/second"), on: loop)
        #expect(retried.error == nil)
        #expect(bodyText(retried) == "/second on 1 body 0")
        #expect(getUpstream.acceptedConnections == 2)

        let postUpstream = TestUpstream(handler: handler)
        defer { postUpstream.stop() }
        let (postClient, postLoop, _) = makeClient(ports: [postUpstream.port])
        #expect(run(postClient, request("/first", method: .post, body: .bytes([1])), on: postLoop).error == nil)
        let notRetried = run(postClient, request("/second", method: .post, body: .bytes([2])), on: postLoop)
        #expect(notRetried.error == .closedEarly(server: UpstreamServer(host: "127.0.0.1", port: postUpstream.port)))
        #expect(postUpstream.acceptedConnections == 1)
        client.closeIdleConnections()
    }

    @Test func connectionTheUpstreamClosedWithItsResponseIsNotPooled() {
        // Connection 0 answers one request and closes: the FIN comes in the response's last segment.
        let upstream = TestUpstream { connection, index in
            if index == 0 {
                guard connection.readRequest() != nil else { return }
                connection.writeAndClose("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                return
            }
            echoPathHandler(connection, index)
        }
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port])
        #expect(run(client, request("/first"), on: loop).error == nil)
        #expect(loop.queue.sync { client.idleConnectionCount(on: loop) } == 0)
        // A POST (never replayed) reaches the upstream, on a new connection.
        let post = run(client, request("/second", method: .post, body: .bytes([1, 2])), on: loop)
        #expect(post.error == nil)
        #expect(bodyText(post) == "/second on 1 body 2")
        #expect(upstream.acceptedConnections == 2)
        client.closeIdleConnections()
    }

    @Test func idleConnectionTheUpstreamClosedIsNotHandedOutForARequestThatCannotBeReplayed() {
        // Connection 0 answers one request, then closes when told to.
        let closeNow = DispatchSemaphore(value: 0), closed = DispatchSemaphore(value: 0)
        let upstream = TestUpstream { connection, index in
            if index == 0 {
                guard connection.readRequest() != nil else { return }
                connection.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                closeNow.wait()
                connection.close()
                closed.signal()
                return
            }
            echoPathHandler(connection, index)
        }
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port])
        #expect(run(client, request("/first"), on: loop).error == nil)
        #expect(loop.queue.sync { client.idleConnectionCount(on: loop) } == 1)
        let delegate = CollectingDelegate()
        loop.queue.sync {
            // The loop is held: the readiness edge of the upstream's FIN is not handled before the POST
            // takes a connection from the pool.
            closeNow.signal()
            closed.wait()
            usleep(100_000)  // the FIN crosses the loopback
            client.execute(request("/second", method: .post, body: .bytes([1, 2])), on: loop, delegate: delegate)
        }
        #expect(delegate.wait(), "exchange did not end")
        let post = delegate.snapshot
        #expect(post.error == nil)
        #expect(bodyText(post) == "/second on 1 body 2")
        #expect(upstream.acceptedConnections == 2)
        client.closeIdleConnections()
    }

    @Test func responseWithConnectionCloseIsNeverPooled() {
        let upstream = TestUpstream { connection, _ in
            while connection.readRequest() != nil {
                guard connection.write("HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 2\r\n\r\nok") else { return }
            }
        }
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port])
        #expect(run(client, request("/"), on: loop).error == nil)
        #expect(loop.queue.sync { client.idleConnectionCount(on: loop) } == 0)
        #expect(run(client, request("/"), on: loop).error == nil)
        #expect(upstream.acceptedConnections == 2)
    }

    @Test func refusedConnectionIsConnectFailed() {
        let port = refusedPort()
        let (client, loop, _) = makeClient(ports: [port])
        let r = run(client, request("/"), on: loop)
        #expect(r.error == .connectFailed(server: UpstreamServer(host: "127.0.0.1", port: port), errno: ECONNREFUSED))
        #expect(r.head == nil)
    }

    @Test func connectToABlackholeTimesOut() {
        // A listener that never accepts, its backlog filled by connections we hold: further SYNs are
        // dropped, so the connect neither succeeds nor fails.
        let blackhole = TestUpstream(backlog: 0, accept: false)
        defer { blackhole.stop() }
        var fillers: [Int32] = []
        defer { for fd in fillers { close(fd) } }
        for _ in 0..<4 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(blackhole.port).bigEndian
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            fillers.append(fd)
        }
        usleep(100_000)
        let (client, loop, _) = makeClient(ports: [blackhole.port]) { $0.connectTimeout = .milliseconds(500) }
        let r = run(client, request("/"), on: loop)
        #expect(r.error == .timedOut(server: UpstreamServer(host: "127.0.0.1", port: blackhole.port), phase: "connect"))
    }

    @Test func silentServerIsAReadTimeout() {
        let upstream = TestUpstream { connection, _ in
            _ = connection.readRequest()
            _ = connection.waitForPeerClose(timeout: 20)
        }
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port]) { $0.readTimeout = .milliseconds(500) }
        let r = run(client, request("/"), on: loop)
        #expect(r.error == .timedOut(server: UpstreamServer(host: "127.0.0.1", port: upstream.port), phase: "read"))
    }

    @Test func garbageIsAnInvalidResponse() {
        let upstream = TestUpstream { connection, _ in
            _ = connection.readRequest()
            connection.write("SSH-2.0-OpenSSH_9.2\r\n")
            _ = connection.waitForPeerClose(timeout: 20)
        }
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port])
        let r = run(client, request("/"), on: loop)
        guard case .invalidResponse(let server, _)? = r.error else { Issue.record("got \(String(describing: r.error))"); return }
        #expect(server.port == upstream.port)
    }

    @Test func smugglingShapedResponseIsInvalidAndNeverPooled() {
        let upstream = TestUpstream { connection, _ in
            _ = connection.readRequest()
            connection.write("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
            _ = connection.waitForPeerClose(timeout: 20)
        }
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port])
        let r = run(client, request("/"), on: loop)
        guard case .invalidResponse? = r.error else { Issue.record("got \(String(describing: r.error))"); return }
        #expect(loop.queue.sync { client.idleConnectionCount(on: loop) } == 0)
    }

    @Test func closeMidBodyIsClosedEarly() {
        let upstream = TestUpstream { connection, _ in
            _ = connection.readRequest()
            connection.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
        }
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port])
        let r = run(client, request("/"), on: loop)
        #expect(r.head?.status == .ok)
        #expect(r.bodyLength == .known(100))
        #expect(bodyText(r) == "0123456789")
        #expect(r.error == .closedEarly(server: UpstreamServer(host: "127.0.0.1", port: upstream.port)))
    }

    @Test func closeDelimitedBodyEndsAtEOFAndIsNotPooled() {
        let upstream = TestUpstream { connection, _ in
            _ = connection.readRequest()
            connection.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close")
        }
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port])
        let r = run(client, request("/"), on: loop)
        #expect(r.error == nil && r.finished)
        #expect(r.bodyLength == .untilClose)
        #expect(bodyText(r) == "until close")
        #expect(loop.queue.sync { client.idleConnectionCount(on: loop) } == 0)
    }

    @Test func chunkedResponseWithTrailersAndHeadResponsesOnOneConnection() {
        let upstream = TestUpstream { connection, _ in
            while let request = connection.readRequest() {
                if request.head.hasPrefix("HEAD") {
                    connection.write("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
                } else {
                    connection.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Sum: 42\r\n\r\n")
                }
            }
        }
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port])
        let head = run(client, request("/", method: .head), on: loop)
        #expect(head.error == nil && head.bodyLength == HTTPBodyLength.none && head.body.isEmpty)
        let chunked = run(client, request("/"), on: loop)
        #expect(chunked.error == nil && chunked.bodyLength == .chunked)
        #expect(bodyText(chunked) == "hello world")
        #expect(chunked.trailers?[.init("X-Sum")!] == "42")
        #expect(run(client, request("/", method: .head), on: loop).error == nil)
        #expect(upstream.acceptedConnections == 1)
        client.closeIdleConnections()
    }

    @Test func requestBodiesStreamWithContentLengthOrChunked() {
        let upstream = TestUpstream(handler: echoPathHandler)
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port])
        let parts: [[UInt8]] = [Array(repeating: 1, count: 70_000), [2, 3], Array(repeating: 4, count: 100_000)]
        let total = parts.reduce(0) { $0 + $1.count }
        let sized = run(client, request("/sized", method: .post, body: .stream(PartsSource(parts), length: total)), on: loop)
        #expect(bodyText(sized) == "/sized on 0 body \(total)")
        let chunked = run(client, request("/chunked", method: .put, body: .stream(PartsSource(parts), length: nil)), on: loop)
        #expect(bodyText(chunked) == "/chunked on 0 body \(total)")
        #expect(upstream.acceptedConnections == 1)
        client.closeIdleConnections()
    }

    /// The upstream may answer before the source's `.end` arrives: with a declared length the body is
    /// complete at its last byte, so the connection is pooled, and the source is still asked once more
    /// (to reach its end). Deterministic: this source never answers that last pull.
    @Test func sizedRequestBodyIsCompleteAtItsLastByteWithoutWaitingForEnd() {
        let upstream = TestUpstream(handler: echoPathHandler)
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port])
        let parts: [[UInt8]] = [Array(repeating: 1, count: 30_000), Array(repeating: 2, count: 5)]
        let source = EndlessTailSource(parts)
        let r = run(client, request("/sized", method: .post, body: .stream(source, length: 30_005)), on: loop)
        #expect(r.error == nil)
        #expect(bodyText(r) == "/sized on 0 body 30005")
        #expect(source.pulls.load(ordering: .relaxed) == 3)
        #expect(loop.queue.sync { client.idleConnectionCount(on: loop) } == 1)
        let again = run(client, request("/next"), on: loop)
        #expect(bodyText(again) == "/next on 0 body 0")
        #expect(upstream.acceptedConnections == 1)
        client.closeIdleConnections()
    }

    @Test func expectContinueWaitsForTheInterimResponse() {
        let sawBodyBeforeContinue = Atomic<Bool>(false)
        let upstream = TestUpstream { connection, _ in
            guard let head = connection.readHead(), head.lowercased().contains("expect: 100-continue") else { return }
            usleep(200_000)  // the body must not arrive before we answer 100 (well under the 5 s continue timeout)
            connection.write("HTTP/1.1 100 Continue\r\n\r\n")
            guard let body = connection.readBytes(5) else { return }
            if body != Array("hello".utf8) { sawBodyBeforeContinue.store(true, ordering: .relaxed) }
            connection.write("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
            _ = connection.waitForPeerClose(timeout: 20)
        }
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port]) { $0.expectContinueTimeout = .seconds(5) }
        var fields = HTTPFields()
        fields[.expect] = "100-continue"
        let r = run(client, request("/upload", method: .post, fields: fields, body: .bytes(Array("hello".utf8))), on: loop)
        #expect(r.error == nil)
        #expect(r.informational == [100])
        #expect(r.head?.status == .created)
        let early = sawBodyBeforeContinue.load(ordering: .relaxed)
        #expect(!early)
    }

    @Test func finalResponseInsteadOfContinueSkipsTheBodyAndClosesTheConnection() {
        let upstream = TestUpstream { connection, _ in
            _ = connection.readHead()
            connection.write("HTTP/1.1 413 Content Too Large\r\nContent-Length: 0\r\n\r\n")
            _ = connection.waitForPeerClose(timeout: 20)
        }
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port]) { $0.expectContinueTimeout = .seconds(5) }
        var fields = HTTPFields()
        fields[.expect] = "100-continue"
        let r = run(client, request("/upload", method: .post, fields: fields, body: .bytes(Array(repeating: 7, count: 1000))), on: loop)
        #expect(r.error == nil && r.head?.status == .contentTooLarge)
        #expect(loop.queue.sync { client.idleConnectionCount(on: loop) } == 0)
    }

    @Test func withheldResumeStopsReadingUntilResumed() {
        let total = 64 << 20
        let writer = Locked<TestUpstreamConnection?>(nil)
        let upstream = TestUpstream { connection, _ in
            writer.withLock { $0 = connection }
            _ = connection.readRequest()
            connection.write("HTTP/1.1 200 OK\r\nContent-Length: \(total)\r\n\r\n")
            let block = [UInt8](repeating: 0x61, count: 1 << 16)
            for _ in 0..<(total >> 16) { guard connection.write(block) else { return } }
            _ = connection.waitForPeerClose(timeout: 30)
        }
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port])
        let delegate = CollectingDelegate(holdResume: true)
        client.execute(request("/big"), on: loop, delegate: delegate)
        #expect(eventually { delegate.snapshot.bodyParts == 1 })
        // While the first part's resume is withheld the client reads nothing more: the upstream's
        // writes stall once the socket buffers are full, far short of the body.
        var last = -1
        var stable = 0
        #expect(eventually(seconds: 20) {
            let now = writer.withLock { $0?.bytesWritten.load(ordering: .relaxed) ?? 0 }
            stable = now == last ? stable + 1 : 0
            last = now
            return stable >= 30
        })
        #expect(last < total / 2)
        #expect(delegate.snapshot.bodyParts == 1)
        // Resumed, the whole body arrives.
        delegate.stopHolding()
        #expect(delegate.wait(seconds: 60))
        let r = delegate.snapshot
        #expect(r.error == nil)
        #expect(r.body.count == total)
        client.closeIdleConnections()
    }

    @Test func cancelMidBodyClosesTheUpstreamConnection() {
        let sawClose = Atomic<Bool>(false)
        let upstream = TestUpstream { connection, _ in
            _ = connection.readRequest()
            connection.write("HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n" + String(repeating: "x", count: 1000))
            if connection.waitForPeerClose(timeout: 20) { sawClose.store(true, ordering: .relaxed) }
        }
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port])
        let exchange = Locked<HTTPClientExchange?>(nil)
        let delegate = CollectingDelegate(onBodyPart: { _ in exchange.withLock { $0?.cancel() } })
        exchange.withLock { $0 = client.execute(request("/"), on: loop, delegate: delegate) }
        #expect(delegate.wait())
        #expect(delegate.snapshot.error == .cancelled)
        let closed = eventually { sawClose.load(ordering: .relaxed) }
        #expect(closed)
        #expect(loop.queue.sync { client.idleConnectionCount(on: loop) } == 0)
    }

    @Test func roundRobinSpreadsRequestsAndSkipsADownServer() {
        let a = TestUpstream(handler: echoPathHandler)
        let b = TestUpstream(handler: echoPathHandler)
        defer { a.stop(); b.stop() }
        let down = refusedPort()
        let (client, loop, _) = makeClient(ports: [a.port, down, b.port]) { $0.failureBackoff = .seconds(60) }
        var bodies: [String] = []
        for i in 0..<6 {
            let r = run(client, request("/\(i)"), on: loop)
            #expect(r.error == nil, "request \(i)")
            bodies.append(bodyText(r))
        }
        // Both live servers served requests (each on one kept-alive connection); the down one was
        // skipped after its first failure without failing any request.
        #expect(a.acceptedConnections == 1)
        #expect(b.acceptedConnections == 1)
        #expect(bodies.count == 6)
        client.closeIdleConnections()
    }

    @Test func allServersDownIsConnectFailed() {
        let (client, loop, _) = makeClient(ports: [refusedPort(), refusedPort()])
        let r = run(client, request("/"), on: loop)
        guard case .connectFailed(_, let code)? = r.error else { Issue.record("got \(String(describing: r.error))"); return }
        #expect(code == ECONNREFUSED)
    }

    @Test func noServerConfigured() {
        let (client, loop, _) = makeClient(ports: [])
        #expect(run(client, request("/"), on: loop).error == .noServerAvailable)
    }

    @Test func idleConnectionsCloseAfterTheIdleTimeout() {
        let sawClose = Atomic<Bool>(false)
        let upstream = TestUpstream { connection, index in
            guard let request = connection.readRequest() else { return }
            let body = "\(request.body.count)"
            connection.write("HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            if connection.waitForPeerClose(timeout: 20) { sawClose.store(true, ordering: .relaxed) }
        }
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port]) { $0.idleTimeout = .milliseconds(300) }
        #expect(run(client, request("/"), on: loop).error == nil)
        let closed = eventually { sawClose.load(ordering: .relaxed) }
        #expect(closed)
        #expect(loop.queue.sync { client.idleConnectionCount(on: loop) } == 0)
    }

    @Test func upstreamKeepAliveTimeoutShortensTheIdleStay() {
        let upstream = TestUpstream { connection, _ in
            while let request = connection.readRequest() {
                let timeout = request.head.contains("/short") ? 2 : 1
                connection.write("HTTP/1.1 200 OK\r\nKeep-Alive: timeout=\(timeout), max=100\r\nContent-Length: 0\r\n\r\n")
            }
        }
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port]) { $0.idleTimeout = .seconds(60) }
        // timeout=1 leaves no safe time to reuse: not pooled.
        #expect(run(client, request("/one"), on: loop).error == nil)
        #expect(loop.queue.sync { client.idleConnectionCount(on: loop) } == 0)
        // timeout=2: pooled for about a second, then closed although idleTimeout is 60 s.
        #expect(run(client, request("/short"), on: loop).error == nil)
        #expect(loop.queue.sync { client.idleConnectionCount(on: loop) } == 1)
        #expect(eventually { loop.queue.sync { client.idleConnectionCount(on: loop) } == 0 })
    }

    /// Keep-Alive parameters are split at comma bytes: `,\u{0301}` is one Character, so `String.split`
    /// read `timeout=1,\u{0301}max=100` as a timeout of "1,\u{0301}max=100" (none) and pooled.
    @Test func upstreamKeepAliveParametersSplitAtCommaBytes() {
        let upstream = TestUpstream { connection, _ in
            while connection.readRequest() != nil {
                connection.write("HTTP/1.1 200 OK\r\nKeep-Alive: timeout=1,\u{0301}max=100\r\nContent-Length: 0\r\n\r\n")
            }
        }
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port]) { $0.idleTimeout = .seconds(60) }
        #expect(run(client, request("/one"), on: loop).error == nil)
        #expect(loop.queue.sync { client.idleConnectionCount(on: loop) } == 0)
    }

    @Test func connectionsAreRetiredAfterMaxRequests() {
        let upstream = TestUpstream(handler: echoPathHandler)
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port]) { $0.maxRequestsPerConnection = 2 }
        for i in 0..<4 { #expect(run(client, request("/\(i)"), on: loop).error == nil) }
        #expect(upstream.acceptedConnections == 2)
        client.closeIdleConnections()
    }

    @Test func idleCapClosesSurplusConnections() {
        let upstream = TestUpstream { connection, _ in
            while let request = connection.readRequest() {
                usleep(200_000)  // both exchanges are in flight at once, on two connections
                connection.write("HTTP/1.1 200 OK\r\nContent-Length: \(request.body.count)\r\n\r\n")
            }
        }
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port]) { $0.maxIdleConnectionsPerLoop = 1 }
        let first = CollectingDelegate(), second = CollectingDelegate()
        client.execute(request("/1"), on: loop, delegate: first)
        client.execute(request("/2"), on: loop, delegate: second)
        #expect(first.wait() && second.wait())
        #expect(first.snapshot.error == nil && second.snapshot.error == nil)
        #expect(upstream.acceptedConnections == 2)
        #expect(loop.queue.sync { client.idleConnectionCount(on: loop) } == 1)
        client.closeIdleConnections()
    }

    @Test func upstreamThatStopsReadingIsASendTimeout() {
        let upstream = TestUpstream { _, _ in usleep(5_000_000) }  // accepts, never reads
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port]) { $0.sendTimeout = .milliseconds(500) }
        let big = [UInt8](repeating: 0x62, count: 64 << 20)
        let r = run(client, request("/upload", method: .post, body: .bytes(big)), on: loop)
        #expect(r.error == .timedOut(server: UpstreamServer(host: "127.0.0.1", port: upstream.port), phase: "send"))
    }

    @Test func delegateIsReleasedWhenTheExchangeEndsWhileItsHandleLives() {
        let upstream = TestUpstream(handler: echoPathHandler)
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port])
        weak var weakDelegate: CollectingDelegate?
        var handle: HTTPClientExchange?
        do {
            let delegate = CollectingDelegate()
            weakDelegate = delegate
            handle = client.execute(request("/"), on: loop, delegate: delegate)
            #expect(delegate.wait())
        }
        #expect(handle != nil)
        #expect(eventually { weakDelegate == nil })
        handle?.cancel()  // after the end: no effect, no callback
        client.closeIdleConnections()
    }

    @Test func upstreamServerURLs() {
        #expect(UpstreamServer(url: "http://127.0.0.1:8000") == UpstreamServer(host: "127.0.0.1", port: 8000))
        #expect(UpstreamServer(url: "https://api.example.com") == UpstreamServer(host: "api.example.com", port: 443, tls: true))
        #expect(UpstreamServer(url: "http://[::1]:81/")?.port == 81)
        #expect(UpstreamServer(url: "http://[::1]:81/")?.authority == "[::1]:81")
        #expect(UpstreamServer(url: "ftp://h") == nil)
        #expect(UpstreamServer(url: "http://h:0") == nil)
        #expect(UpstreamServer(url: "http://h/path") == nil)
        #expect(UpstreamServer(url: "http://u@h") == nil)
    }
}
