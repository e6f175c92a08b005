#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPClient
import HTTPCore
import HTTPTypes
import Testing
import TestPKI

/// https upstreams through HTTPCore's TLS client transport, against `openssl s_server -www` (a TLS
/// server we did not write) with a throwaway CA.
@Suite("HTTPClient over TLS against openssl s_server", .serialized)
struct HTTPSUpstreamTests {
    /// Starts `openssl s_server -www` on a free port; returns the process and port once it accepts.
    func startServer(_ pki: TestCertificates) throws -> (ChildProcess, Int) {
        let port = refusedPort()
        let p = try ChildProcess.spawn("/usr/bin/openssl", ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", pki.path("server.pem"),
                                                             "-key", pki.path("server.key"), "-www", "-quiet"])
        let up = eventually {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(port).bigEndian
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            } == 0
        }
        if !up { stopServer(p) }
        try #require(up, "openssl s_server did not start")
        return (p, port)
    }

    /// s_server does not stop on SIGTERM: SIGKILL by PID, then reap it.
    func stopServer(_ p: ChildProcess) {
        p.kill(SIGKILL)
        p.wait()
    }

    func client(port: Int, host: String, caFile: String) -> (HTTPClient, EventLoop, EventLoopGroup) {
        var configuration = HTTPClientConfiguration(servers: [UpstreamServer(host: host, port: port, tls: true)])
        configuration.tls = TLSClientConfiguration(caFile: caFile)
        configuration.readTimeout = .seconds(10)
        let group = EventLoopGroup(count: 1, sweepInterval: .milliseconds(50))
        return (HTTPClient(configuration: configuration, loops: group), group.loops[0], group)
    }

    @Test func httpsExchangeVerifiedAgainstTheCA() throws {
        let pki = try TestCertificates()
        defer { pki.remove() }
        let (server, port) = try startServer(pki)
        defer { stopServer(server) }
        for host in ["localhost", "127.0.0.1"] {
            let (c, loop, _) = client(port: port, host: host, caFile: pki.path("ca.pem"))
            let r = run(c, request("/"), on: loop)
            #expect(r.error == nil, "\(host)")
            #expect(r.head?.status == .ok)
            #expect(bodyText(r).contains("s_server"))
        }
    }

    @Test func untrustedCertificateIsAConnectFailure() throws {
        let pki = try TestCertificates()
        defer { pki.remove() }
        let (server, port) = try startServer(pki)
        defer { stopServer(server) }
        let (c, loop, _) = client(port: port, host: "localhost", caFile: pki.path("other.pem"))
        let r = run(c, request("/"), on: loop)
        #expect(r.error == .connectFailed(server: UpstreamServer(host: "localhost", port: port, tls: true), errno: EPROTO))
    }
}
