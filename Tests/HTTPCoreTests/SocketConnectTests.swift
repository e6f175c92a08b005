#if canImport(Glibc)
import Glibc
#endif
import Testing
import TestSupport
@testable import HTTPCore

@Suite("Non-blocking connect: IPv4, IPv6, refused, names")
struct SocketConnectTests {
    /// Waits (bounded) until `fd` is writable, then returns `connectResult`.
    func settle(_ fd: Int32) -> Int32 {
        var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        _ = poll(&p, 1, 5000)
        return Socket.connectResult(fd)
    }

    @Test(arguments: ["127.0.0.1", "::1", "[::1]"])
    func connectsToAListener(host: String) throws {
        let bare = host.trimmingCharacters(in: ["[", "]"])
        let listener = try Socket.makeListener(host: bare, port: 0, backlog: 4)
        defer { close(listener) }
        let (fd, connected) = try Socket.connect(host: host, port: Socket.localAddress(listener).port)
        defer { close(fd) }
        if !connected { #expect(settle(fd) == 0) }
        #expect(fcntl(fd, F_GETFL) & O_NONBLOCK != 0)
    }

    @Test func refusedConnectionReportsECONNREFUSED() throws {
        // A port held by a socket that never listens (a port merely released could be taken by a
        // parallel test's listener).
        let port = UInt16(RefusingPort.make())
        do {
            let (fd, connected) = try Socket.connect(host: "127.0.0.1", port: port)
            defer { close(fd) }
            #expect(!connected)
            #expect(settle(fd) == ECONNREFUSED)
        } catch let error as SocketError {
            #expect(error.errno == ECONNREFUSED)
        }
    }

    @Test func namesResolveAndUnknownNamesAreErrors() throws {
        let listener = try Socket.makeListener(host: "127.0.0.1", port: 0, backlog: 4)
        defer { close(listener) }
        let (fd, connected) = try Socket.connect(host: "localhost", port: Socket.localAddress(listener).port)
        defer { close(fd) }
        if !connected { #expect(settle(fd) == 0 || settle(fd) == ECONNREFUSED) }  // localhost may be ::1 first
        #expect(throws: SocketError.self) { try Socket.connect(host: "no-such-host.invalid", port: 80) }
        #expect(Socket.isAddressLiteral("10.0.0.1") && Socket.isAddressLiteral("[::1]") && !Socket.isAddressLiteral("example.org"))
    }
}
