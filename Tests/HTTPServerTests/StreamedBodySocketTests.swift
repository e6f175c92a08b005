#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import HTTPTypes
import Testing
@testable import HTTPServer
import Locking

/// Reads a streamed body to its end on the loop (one read at a time), then answers with its length
/// and a checksum; bodies of other requests are answered the same way from `body`.
private struct StreamingSumHandler: HTTPHandler {
    func handle(_ request: HTTPServerRequest, respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        guard let stream = request.bodyStream else {
            respond(.text(.ok, "buffered \(request.body.count) \(request.body.reduce(0) { $0 &+ Int($1) })"))
            return
        }
        if request.pathWithoutQuery == "/up/refuse" { respond(.text(.contentTooLarge, "no thanks")); return }
        let total = Locked<(count: Int, sum: Int, parts: Int)>((0, 0, 0))
        @Sendable func next() {
            stream.read { part in
                switch part {
                case .bytes(let b):
                    total.withLock { $0.count += b.count; $0.sum = b.reduce($0.sum) { $0 &+ Int($1) }; $0.parts += 1 }
                    next()
                case .end(let trailers):
                    let t = total.withLock { $0 }
                    respond(.text(.ok, "streamed \(t.count) \(t.sum) trailers=\(trailers.count) expected=\(stream.expectedLength.map(String.init) ?? "-")"))
                case .failed(let error):
                    respond(.text(.badRequest, "failed \(error)"))
                }
            }
        }
        next()
    }
}

private func startServer() throws -> (HTTPServer, UInt16) {
    var config = ServerConfiguration()
    config.listenAddresses = [("127.0.0.1", 0)]
    config.limits.maxBodyBytes = 1024  // streamed bodies are not limited by it
    config.streamsRequestBody = { $0.path?.hasPrefix("/up") == true }
    let server = HTTPServer(configuration: config, handler: StreamingSumHandler())
    try server.start()
    return (server, server.boundAddresses[0].port)
}

/// A blocking client socket with a 10 s receive timeout.
private func connectClient(_ port: UInt16) throws -> Int32 {
    let (fd, connected) = try Socket.connect(host: "127.0.0.1", port: port)
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
    if !connected {
        var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        _ = poll(&p, 1, 5000)
    }
    var timeout = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    return fd
}

private func sendAll(_ fd: Int32, _ bytes: [UInt8]) {
    var sent = 0
    while sent < bytes.count {
        let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
        if n <= 0 { return }
        sent += n
    }
}

/// Reads until `predicate` holds on what arrived, the peer closes, or the timeout.
private func receive(_ fd: Int32, until predicate: (String) -> Bool) -> String {
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while !predicate(String(decoding: received, as: UTF8.self)) {
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { break }
        received += buffer[0..<n]
    }
    return String(decoding: received, as: UTF8.self)
}

private func stop(_ server: HTTPServer) async {
    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
        server.shutdown(deadline: .seconds(5)) { _ in c.resume() }
    }
}

@Suite("Streamed request bodies over real sockets")
struct StreamedBodySocketTests {
    let body: [UInt8] = (0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
    var sum: Int { body.reduce(0) { $0 &+ Int($1) } }

    @Test func contentLengthAndChunkedBodiesStreamAndTheConnectionIsReused() async throws {
        let (server, port) = try startServer()
        let expectedSum = sum
        let text: String = try await withCheckedThrowingContinuation { c in
            DispatchQueue.global().async {
                do {
                    let fd = try connectClient(port)
                    defer { close(fd) }
                    sendAll(fd, Array("POST /up/a HTTP/1.1\r\nHost: t\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body)
                    var chunked = Array("POST /up/b HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
                    var i = 0
                    while i < body.count {
                        let n = min(70_000, body.count - i)
                        ChunkedCoding.appendChunk(body[i..<i + n], into: &chunked)
                        i += n
                    }
                    chunked += Array("0\r\nX-T: 1\r\n\r\n".utf8)
                    sendAll(fd, chunked)
                    sendAll(fd, Array("POST /small HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc".utf8))
                    c.resume(returning: receive(fd, until: { _ in false }))
                } catch { c.resume(throwing: error) }
            }
        }
        await stop(server)
        #expect(text.contains("streamed \(body.count) \(expectedSum) trailers=0 expected=\(body.count)"))
        #expect(text.contains("streamed \(body.count) \(expectedSum) trailers=1 expected=-"))
        #expect(text.contains("buffered 3 294"))
        #expect(text.components(separatedBy: "HTTP/1.1 200 OK").count == 4)
    }

    @Test func continueIsSentOnlyWhenTheHandlerReads() async throws {
        let (server, port) = try startServer()
        let (refused, accepted): (String, String) = try await withCheckedThrowingContinuation { c in
            DispatchQueue.global().async {
                do {
                    // Answered without reading: the client never gets 100 Continue, only the answer.
                    let a = try connectClient(port)
                    defer { close(a) }
                    sendAll(a, Array("POST /up/refuse HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5000000\r\n\r\n".utf8))
                    let refused = receive(a, until: { $0.contains("no thanks") })
                    // Read by the handler: 100 Continue first, then the body goes and the answer comes.
                    let b = try connectClient(port)
                    defer { close(b) }
                    sendAll(b, Array("POST /up/x HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n".utf8))
                    let interim = receive(b, until: { $0.contains("\r\n\r\n") })
                    sendAll(b, Array("wxyz".utf8))
                    let final = receive(b, until: { $0.contains("expected=") })
                    c.resume(returning: (refused, interim + "|" + final))
                } catch { c.resume(throwing: error) }
            }
        }
        await stop(server)
        #expect(refused.hasPrefix("HTTP/1.1 413 "))
        #expect(!refused.contains("100 Continue"))
        #expect(refused.contains("Connection: close"))
        #expect(accepted.hasPrefix("HTTP/1.1 100 Continue\r\n\r\n|HTTP/1.1 200 OK"))
        #expect(accepted.contains("streamed 4 "))
    }

    @Test func aClientThatStopsMidBodyFailsTheStream() async throws {
        let (server, port) = try startServer()
        let text: String = try await withCheckedThrowingContinuation { c in
            DispatchQueue.global().async {
                do {
                    let fd = try connectClient(port)
                    defer { close(fd) }
                    sendAll(fd, Array("POST /up/cut HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nonly ten!!".utf8))
                    shutdown(fd, Int32(SHUT_WR))
                    c.resume(returning: receive(fd, until: { _ in false }))
                } catch { c.resume(throwing: error) }
            }
        }
        await stop(server)
        #expect(text.hasPrefix("HTTP/1.1 400 "))
        #expect(text.contains("failed connectionClosed"))
    }

    /// Malformed chunk framing in a streamed body is answered like a buffered one: 400 with the
    /// parser's reason (the handler's own answer to its failed read comes too late and is dropped),
    /// and the connection closes after it.
    @Test(arguments: ["5\nhello\r\n0\r\n\r\n", "0x5\r\nhello\r\n0\r\n\r\n", "fffffffffffffffff\r\nhello\r\n",
                      "5\r\nhelloXX0\r\n\r\n", "-5\r\nhello\r\n0\r\n\r\n"])
    func malformedChunkFramingInAStreamedBodyIsA400(chunks: String) async throws {
        let (server, port) = try startServer()
        let text: String = try await withCheckedThrowingContinuation { c in
            DispatchQueue.global().async {
                do {
                    let fd = try connectClient(port)
                    defer { close(fd) }
                    sendAll(fd, Array("POST /up/bad HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n\(chunks)".utf8))
                    c.resume(returning: receive(fd, until: { _ in false }))  // until the server closes
                } catch { c.resume(throwing: error) }
            }
        }
        await stop(server)
        #expect(text.hasPrefix("HTTP/1.1 400 "), "\(text)")
        #expect(text.lowercased().contains("connection: close"))
        #expect(text.contains("chunk"), "the parser's reason: \(text)")
        #expect(!text.contains("failed"), "the handler's late answer: \(text)")
    }
}
