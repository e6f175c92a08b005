#if canImport(Glibc)
import Glibc
#endif
import Testing
import TestPKI
@testable import HTTPCore

/// The TLS client transport against the TLS server transport over real loopback sockets: SNI,
/// verification against a CA file, host-name and IP checks, data both ways.
@Suite("TLS client: handshake, verification, data")
struct TLSClientTransportTests {
    let pki: TestCertificates

    init() throws { pki = try TestCertificates() }

    /// A connected (client, server) pair of transports over 127.0.0.1.
    func pair(client configuration: TLSClientConfiguration, serverName: String) throws
        -> (client: TLSClientTransport, server: TLSServerTransport) {
        let listener = try Socket.makeListener(host: "127.0.0.1", port: 0, backlog: 4)
        defer { close(listener) }
        let port = Socket.localAddress(listener).port
        let (fd, _) = try Socket.connect(host: "127.0.0.1", port: port)
        var accepted: (fd: Int32, address: String)?
        for _ in 0..<1000 where accepted == nil {
            var p = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            _ = poll(&p, 1, 10)
            accepted = try Socket.accept(listener)
        }
        let a = try #require(accepted)
        #expect(Socket.connectResult(fd) == 0)
        let serverContext = try TLSContext(configuration: TLSConfiguration(certificateChainFile: pki.path("server.pem"),
                                                                          privateKeyFile: pki.path("server.key")))
        let server = try #require(TLSServerTransport(descriptor: a.fd, context: serverContext, counters: TLSHandshakeCounters()))
        let client = try #require(TLSClientTransport(descriptor: fd, context: try TLSClientContext(configuration: configuration),
                                                     serverName: serverName))
        return (client, server)
    }

    /// Drives both ends until the client has written `message` and the server has read it (or one
    /// fails). Bounded in rounds. Returns what the server read, or nil with the client's failure.
    func send(_ message: [UInt8], from client: TLSClientTransport, to server: TLSServerTransport) -> [UInt8]? {
        var written = 0
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<2000 {
            if written < message.count {
                let r = message.withUnsafeBytes { client.write(UnsafeRawBufferPointer(rebasing: $0[written...]), more: false) }
                switch r {
                case .bytes(let n): written += n
                case .wouldBlock: break
                case .failed, .endOfStream: return nil
                }
            }
            let s = buffer.withUnsafeMutableBytes { server.read(into: $0) }
            switch s {
            case .bytes(let n): received += buffer[0..<n]
            case .wouldBlock: break
            case .failed, .endOfStream: return nil
            }
            if received.count == message.count { return received }
            var fds = [pollfd(fd: client.descriptor, events: Int16(POLLIN | POLLOUT), revents: 0),
                       pollfd(fd: server.descriptor, events: Int16(POLLIN), revents: 0)]
            _ = poll(&fds, 2, 10)
        }
        return nil
    }

    func receive(_ count: Int, by client: TLSClientTransport) -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<1000 where received.count < count {
            switch buffer.withUnsafeMutableBytes({ client.read(into: $0) }) {
            case .bytes(let n): received += buffer[0..<n]
            case .wouldBlock:
                var p = pollfd(fd: client.descriptor, events: Int16(POLLIN), revents: 0)
                _ = poll(&p, 1, 10)
            case .failed, .endOfStream: return received
            }
        }
        return received
    }

    @Test func verifiedHandshakeBySNIAndDataBothWays() throws {
        defer { pki.remove() }
        let (client, server) = try pair(client: TLSClientConfiguration(caFile: pki.path("ca.pem")), serverName: "localhost")
        defer { client.close(); server.close() }
        let request = Array("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8)
        #expect(send(request, from: client, to: server) == request)
        #expect(client.isEstablished)
        #expect(client.negotiatedProtocol == "http/1.1")
        let reply = Array(repeating: UInt8(ascii: "z"), count: 100_000)
        var sent = 0
        var got: [UInt8] = []
        for _ in 0..<2000 where got.count < reply.count {
            if sent < reply.count, case .bytes(let n) = reply.withUnsafeBytes({ server.write(UnsafeRawBufferPointer(rebasing: $0[sent...]), more: false) }) {
                sent += n
            }
            got += receive(0, by: client)
            got += receive(min(1, reply.count - got.count), by: client)
        }
        #expect(got == reply)
    }

    @Test func ipLiteralIsCheckedAgainstTheCertificatesIPAddress() throws {
        defer { pki.remove() }
        let (client, server) = try pair(client: TLSClientConfiguration(caFile: pki.path("ca.pem")), serverName: "127.0.0.1")
        defer { client.close(); server.close() }
        #expect(send(Array("ping".utf8), from: client, to: server) == Array("ping".utf8))
    }

    @Test func untrustedCertificateFailsWithAReason() throws {
        defer { pki.remove() }
        let (client, server) = try pair(client: TLSClientConfiguration(caFile: pki.path("other.pem")), serverName: "localhost")
        defer { client.close(); server.close() }
        #expect(send(Array("ping".utf8), from: client, to: server) == nil)
        #expect(!client.isEstablished)
        #expect(client.failureReason?.contains("certificate verification failed") == true)
    }

    @Test func wrongHostNameFails() throws {
        defer { pki.remove() }
        let (client, server) = try pair(client: TLSClientConfiguration(caFile: pki.path("ca.pem")), serverName: "example.org")
        defer { client.close(); server.close() }
        #expect(send(Array("ping".utf8), from: client, to: server) == nil)
        #expect(client.failureReason?.contains("verification failed") == true)
    }

    @Test func verificationCanBeTurnedOff() throws {
        defer { pki.remove() }
        let (client, server) = try pair(client: TLSClientConfiguration(caFile: pki.path("other.pem"), verifyPeer: false),
                                        serverName: "example.org")
        defer { client.close(); server.close() }
        #expect(send(Array("ping".utf8), from: client, to: server) == Array("ping".utf8))
    }

    @Test func missingCAFileIsAClearError() {
        defer { pki.remove() }
        do {
            _ = try TLSClientContext(configuration: TLSClientConfiguration(caFile: pki.path("missing.pem")))
            Issue.record("a missing CA file was accepted")
        } catch let error as TLSContextError {
            #expect(error.description.contains("missing.pem"))
        } catch {
            Issue.record("unexpected error \(error)")
        }
        #expect((try? TLSClientContext(configuration: TLSClientConfiguration())) != nil)  // the system store loads
    }
}
