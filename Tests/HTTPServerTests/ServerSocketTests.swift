#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import HTTPTypes
import Testing
@testable import HTTPServer

/// Runs the blocking client on a Dispatch thread: blocking a Swift concurrency thread could starve
/// the cooperative pool that stream producers (Tasks) need.
private func exchange(port: UInt16, _ request: String) async throws -> String {
    try await withCheckedThrowingContinuation { (c: CheckedContinuation<String, any Error>) in
        DispatchQueue.global().async {
            do { c.resume(returning: try blockingExchange(port: port, request)) } catch { c.resume(throwing: error) }
        }
    }
}

/// A blocking TCP client for tests: connect to 127.0.0.1:port, send, read until the peer closes.
private func blockingExchange(port: UInt16, _ request: String) throws -> String {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var timeout = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = port.bigEndian
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
    let rc = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    try #require(rc == 0)
    let bytes = Array(request.utf8)
    _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { break }
        received += buffer[0..<n]
    }
    return String(decoding: received, as: UTF8.self)
}

private func startServer(_ handler: some HTTPHandler) throws -> (HTTPServer, UInt16) {
    var config = ServerConfiguration()
    config.listenAddresses = [("127.0.0.1", 0)]
    let server = HTTPServer(configuration: config, handler: handler)
    try server.start()
    return (server, server.boundAddresses[0].port)
}

private func stop(_ server: HTTPServer) async {
    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
        server.shutdown(deadline: .seconds(5)) { _ in c.resume() }
    }
}

/// Streams "chunk-0".."chunk-2" with the async writer, waiting for back-pressure between writes.
private struct StreamingHandler: HTTPHandler {
    func handle(_ request: HTTPServerRequest, respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        // Produced with the callback API on Dispatch, not in a Task: under a parallel test run the
        // cooperative pool can be busy with CPU-bound codec tests for longer than the client waits.
        respond(HTTPServerResponse(status: .ok, headerFields: [.contentType: "text/plain"], body: .stream(StreamBody { writer in
            @Sendable func send(_ i: Int) {
                guard i < 3 else { return writer.finish() }
                writer.write(Array("chunk-\(i);".utf8)) { DispatchQueue.global().async { send(i + 1) } }
            }
            DispatchQueue.global().async { send(0) }
        })))
    }
}

/// Answers later from another queue, echoing the request body.
private struct AsyncEchoHandler: HTTPHandler {
    func handle(_ request: HTTPServerRequest, respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(20)) {
            respond(HTTPServerResponse(status: .ok, body: .bytes(Array("echo:".utf8) + request.body)))
        }
    }
}

/// Adds a header on the way out and refuses /forbidden before the wrapped handler sees it.
private struct TagMiddleware: HTTPMiddleware {
    let tag: String
    func handle(_ request: HTTPServerRequest, next: any HTTPHandler, respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        if request.pathWithoutQuery == "/forbidden" { respond(.text(.forbidden, "no")); return }
        next.handle(request) { response in
            var r = response
            r.head.headerFields.append(HTTPField(name: HTTPField.Name("X-Tag")!, value: tag))
            respond(r)
        }
    }
}

@Suite("HTTPServer over real sockets: streaming, async handlers, middleware")
struct ServerSocketTests {
    @Test func streamedBodyUsesChunkedCodingOnHTTP11() async throws {
        let (server, port) = try startServer(StreamingHandler())
        let text = try await exchange(port: port, "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        await stop(server)
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(text.contains("Transfer-Encoding: chunked\r\n"))
        #expect(!text.contains("Content-Length"))
        #expect(text.hasSuffix("\r\n\r\n8\r\nchunk-0;\r\n8\r\nchunk-1;\r\n8\r\nchunk-2;\r\n0\r\n\r\n"))
    }

    @Test func streamedBodyIsCloseDelimitedOnHTTP10() async throws {
        let (server, port) = try startServer(StreamingHandler())
        let text = try await exchange(port: port, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        await stop(server)
        #expect(text.contains("Connection: close\r\n"))
        #expect(text.hasSuffix("\r\n\r\nchunk-0;chunk-1;chunk-2;"))
    }

    @Test func asyncResponsesKeepPipelineOrder() async throws {
        let (server, port) = try startServer(AsyncEchoHandler())
        let text = try await exchange(port: port,
            "POST /1 HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\nA"
            + "POST /2 HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nB\r\n0\r\n\r\n"
            + "POST /3 HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nConnection: close\r\n\r\nC")
        await stop(server)
        let bodies = text.components(separatedBy: "\r\n\r\n").dropFirst().map { $0.prefix(6) }
        #expect(bodies.map(String.init) == ["echo:A", "echo:B", "echo:C"])
    }

    @Test func middlewareWrapsHandler() async throws {
        let handler = StreamingHandler().wrapped(in: [TagMiddleware(tag: "outer"), TagMiddleware(tag: "inner")])
        let (server, port) = try startServer(ClosureHandler { request, respond in handler.handle(request, respond: respond) })
        let ok = try await exchange(port: port, "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        let refused = try await exchange(port: port, "GET /forbidden HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        await stop(server)
        #expect(ok.contains("X-Tag: inner\r\nX-Tag: outer\r\n"))
        #expect(refused.hasPrefix("HTTP/1.1 403 Forbidden\r\n"))
    }

    @Test func requestsCarryTheEventLoopTheyArrivedOn() async throws {
        // Each loop's queue is tagged with its index; the handler reads the tag of the queue it runs on.
        let key = DispatchSpecificKey<Int>()
        let (server, port) = try startServer(ClosureHandler { request, respond in
            guard let loop = request.eventLoop else { respond(.text(.internalServerError, "no loop")); return }
            respond(.text(.ok, "loop \(loop.index) running on \(DispatchQueue.getSpecific(key: key) ?? -1)"))
        })
        for loop in server.context.loops.loops { loop.queue.setSpecific(key: key, value: loop.index) }
        let text = try await exchange(port: port, "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        await stop(server)
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        let body = text.components(separatedBy: "\r\n\r\n").last ?? ""
        let words = body.split(whereSeparator: { $0 == " " || $0 == "\n" })
        #expect(words.count == 5 && words[1] == words[4])
        #expect(HTTPServerRequest(head: HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/")).eventLoop == nil)
    }

    @Test func requestsCarryTheirPeersAddressAndHost() async throws {
        let (server, port) = try startServer(ClosureHandler { request, respond in
            respond(.text(.ok, "\(request.remoteAddress) \(request.remoteHost)"))
        })
        let text = try await exchange(port: port, "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        await stop(server)
        let words = (text.components(separatedBy: "\r\n\r\n").last ?? "").split(whereSeparator: { $0 == " " || $0 == "\n" })
        #expect(words.count == 2 && words[0].hasPrefix("127.0.0.1:") && words[1] == "127.0.0.1", "\(words)")
        // A request made in process gets the host from the address it is given.
        for (address, host) in [("127.0.0.1:53122", "127.0.0.1"), ("[::1]:53122", "::1"), ("[2001:db8::7]:80", "2001:db8::7"),
                                ("2001:db8::7", "2001:db8::7"), ("unix", "unix"), ("", "")] {
            let request = HTTPServerRequest(head: HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/"), remoteAddress: address)
            #expect(request.remoteHost == host, "\(address)")
        }
    }

    @Test func portInUseIsReported() throws {
        let (server, port) = try startServer(StreamingHandler())
        var config = ServerConfiguration()
        config.listenAddresses = [("127.0.0.1", port)]
        let second = HTTPServer(configuration: config, handler: StreamingHandler())
        #expect { try second.start() } throws: { ($0 as? SocketError)?.isAddressInUse == true }
        server.shutdown(deadline: .seconds(1)) { _ in }
    }
}
