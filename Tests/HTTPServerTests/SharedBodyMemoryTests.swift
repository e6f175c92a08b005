#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import HTTPServer

/// Resident set size of this process, in bytes (VmRSS).
private func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
          let kb = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") else { return 0 }
    return kb * 1024
}

/// Hands every request the same 20 MB array.
private struct SharedBodyHandler: HTTPHandler {
    let body: [UInt8]
    func handle(_ request: HTTPServerRequest, respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        respond(HTTPServerResponse(status: .ok, body: .bytes(body)))
    }
}

@Suite("Large in-memory bodies are written from the shared array")
struct SharedBodyMemoryTests {
    @Test func neverReadingClientsDoNotCopyTheBody() async throws {
        let size = 20 << 20
        let body = [UInt8](unsafeUninitializedCapacity: size) { b, n in
            for i in 0..<size { b[i] = UInt8(truncatingIfNeeded: i &* 7) }
            n = size
        }
        var config = ServerConfiguration()
        config.listenAddresses = [("127.0.0.1", 0)]
        let server = HTTPServer(configuration: config, handler: SharedBodyHandler(body: body))
        try server.start()
        let port = server.boundAddresses[0].port
        let clients = 20
        let before = residentBytes()
        var sockets: [Int32] = []
        for _ in 0..<clients {
            let (fd, _) = try Socket.connect(host: "127.0.0.1", port: port)
            var small: Int32 = 4096
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
            var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            _ = poll(&p, 1, 5000)
            let request = Array("GET / HTTP/1.1\r\nHost: t\r\n\r\n".utf8)
            _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            sockets.append(fd)
        }
        // Wait (bounded) until every client has the start of its response: the server has queued all
        // twenty 20 MB bodies, and none is read further.
        var answered = 0
        for _ in 0..<500 {
            answered = sockets.filter { fd in
                var byte: UInt8 = 0
                return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) == 1
            }.count
            if answered == clients { break }
            usleep(10_000)
        }
        let grown = residentBytes() - before
        for fd in sockets { close(fd) }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            server.shutdown(deadline: .seconds(5)) { _ in c.resume() }
        }
        #expect(answered == clients)
        // Copied per connection this would be 20 × 20 MB = 400 MB; shared it is the socket buffers'
        // worth (kernel memory, not RSS) plus small change.
        #expect(grown < 100 << 20, "RSS grew by \(grown >> 20) MB for \(clients) never-reading clients of one 20 MB body")
        print("shared body: RSS +\(grown >> 20) MB for \(clients) never-reading clients of a 20 MB body")
    }
}
