import Dispatch
import HTTPServer

/// The lab's HTTP server: one ``LabHandler`` on plain (and, with a certificate, HTTPS) listeners.
/// Lifetime: `start()` once, `shutdown(deadline:)` once. Thread-safety: as `HTTPServer`.
public final class LabServer: Sendable {
    public let server: HTTPServer
    public let handler: LabHandler

    /// `hosts` are IP literals; `port` 0 picks a free one. With `tls`, the plain port is not opened
    /// and the lab listens on HTTPS only (`tlsPort`, default `port`).
    public init(hosts: [String], port: UInt16, tls: TLSConfiguration? = nil) {
        var configuration = ServerConfiguration()
        if let tls {
            configuration.listenAddresses = []
            configuration.tls = tls
            configuration.tlsListenAddresses = hosts.map { (host: $0, port: port) }
        } else {
            configuration.listenAddresses = hosts.map { (host: $0, port: port) }
        }
        configuration.maxConnections = 256
        configuration.limits.maxBodyBytes = 64 << 10  // reports are a few bytes
        configuration.eventLoopCount = 1
        handler = LabHandler()
        server = HTTPServer(configuration: configuration, handler: handler)
    }

    public func start() throws { try server.start() }

    /// `scheme://host:port` of every listener (IPv6 hosts bracketed).
    public var endpoints: [String] {
        server.boundEndpoints.map { e in
            "\(e.scheme)://\(e.host.contains(":") ? "[\(e.host)]" : e.host):\(e.port)"
        }
    }

    public func shutdown(deadline: Duration) {
        let done = DispatchSemaphore(value: 0)
        server.shutdown(deadline: deadline) { _ in done.signal() }
        done.wait()
    }
}
