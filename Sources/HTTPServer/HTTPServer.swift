#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Logging
import HTTPCore
import Locking

/// A socket-based HTTP/1.1 server on Dispatch.
///
/// ```swift
/// let server = HTTPServer(configuration: config, handler: StaticFileHandler(root: root))
/// try server.start()
/// ...
/// server.shutdown(deadline: .seconds(10)) { exit(0) }
/// ```
///
/// Thread-safety: `listeners` is written once in `start()` under a mutex; everything else is
/// immutable or owned by `ServerContext` (see there). All methods may be called from any thread.
public final class HTTPServer: Sendable {
    public let configuration: ServerConfiguration
    let context: ServerContext
    private let listeners = Locked<[Listener]>([])
    /// Set in `start()` when `configuration.tls` is given.
    private let certificates = Locked<CertificateReloader?>(nil)
    /// Port for `Location` of HTTP→HTTPS redirects, set in `start()`.
    private let redirectPort = HTTPSRedirectHandler.PortCell(443)

    public init(configuration: ServerConfiguration, handler: any HTTPHandler, accessLog: AccessLog = AccessLog()) {
        self.configuration = configuration
        let outer: any HTTPHandler = configuration.redirectToHTTPS
            ? HTTPSRedirectHandler(next: handler, port: redirectPort) : handler
        self.context = ServerContext(configuration: configuration, handler: outer, accessLog: accessLog)
    }

    /// Binds every configured address (plain, then HTTPS) and starts accepting. Throws `SocketError`
    /// (e.g. address in use) or `TLSContextError` (certificate or key unusable) without leaving any
    /// listener open. Also ignores SIGPIPE (writes to closed sockets must fail with
    /// EPIPE, not kill the process) and raises the open-files soft limit to the hard limit.
    public func start() throws {
        signal(SIGPIPE, SIG_IGN)
        Socket.raiseFileDescriptorLimit()
        var bound: [Listener] = []
        var reloader: CertificateReloader?
        if let tls = configuration.tls, !configuration.tlsListenAddresses.isEmpty {
            reloader = try CertificateReloader(configuration: tls)
        }
        do {
            for (host, port) in configuration.listenAddresses {
                bound.append(try Listener(host: host, port: port, context: context))
            }
            for (host, port) in configuration.tlsListenAddresses {
                guard let reloader else { throw TLSContextError("HTTPS listener \(host):\(port) has no TLS configuration") }
                bound.append(try Listener(host: host, port: port, context: context, tls: reloader))
            }
        } catch {
            for l in bound { close(l.descriptor) }
            throw error
        }
        if let p = configuration.httpsRedirectPort ?? bound.first(where: { $0.isTLS })?.address.port { redirectPort.set(Int(p)) }
        certificates.withLock { $0 = reloader }
        for l in bound { l.start() }
        listeners.withLock { $0 = bound }
    }

    /// Addresses actually bound (ports resolved when 0 was configured), plain and HTTPS.
    public var boundAddresses: [(host: String, port: UInt16)] { listeners.withLock { $0.map { (host: $0.address.host, port: $0.address.port) } } }

    /// Like `boundAddresses`, with the scheme each listener speaks ("http" or "https").
    public var boundEndpoints: [(scheme: String, host: String, port: UInt16)] {
        listeners.withLock { $0.map { (scheme: $0.isTLS ? "https" : "http", host: $0.address.host, port: $0.address.port) } }
    }

    /// Re-reads the TLS certificate and key files (SIGHUP). New connections use them; open ones keep
    /// theirs. Throws `TLSContextError` (the old certificates stay in use); no-op without TLS.
    public func reloadCertificates() throws {
        try certificates.withLock { $0 }?.reload()
    }

    /// TLS handshake counters; nil without HTTPS listeners.
    public var tlsHandshakes: TLSHandshakeCounters? { certificates.withLock { $0 }?.counters }

    /// Number of open client connections.
    public var connectionCount: Int { context.registry.count }

    /// Graceful shutdown; see `GracefulShutdown`.
    public func shutdown(deadline: Duration, completion: @escaping @Sendable (_ forced: Bool) -> Void) {
        let stopped = listeners.withLock { l -> [Listener] in let all = l; l = []; return all }
        GracefulShutdown(registry: context.registry, listeners: stopped).run(deadline: deadline, completion: completion)
    }
}
