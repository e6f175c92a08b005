#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Logging
import Synchronization

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
    private let listeners = Mutex<[Listener]>([])

    public init(configuration: ServerConfiguration, handler: any HTTPHandler, accessLog: AccessLog = AccessLog()) {
        self.configuration = configuration
        self.context = ServerContext(configuration: configuration, handler: handler, accessLog: accessLog)
    }

    /// Binds every configured address and starts accepting. Throws `SocketError` (e.g. address in use)
    /// without leaving any listener open. Also ignores SIGPIPE (writes to closed sockets must fail with
    /// EPIPE, not kill the process) and raises the open-files soft limit to the hard limit.
    public func start() throws {
        signal(SIGPIPE, SIG_IGN)
        Socket.raiseFileDescriptorLimit()
        var bound: [Listener] = []
        do {
            for (host, port) in configuration.listenAddresses {
                bound.append(try Listener(host: host, port: port, context: context))
            }
        } catch {
            for l in bound { close(l.descriptor) }
            throw error
        }
        for l in bound { l.start() }
        listeners.withLock { $0 = bound }
    }

    /// Addresses actually bound (ports resolved when 0 was configured).
    public var boundAddresses: [(host: String, port: UInt16)] { listeners.withLock { $0.map { (host: $0.address.host, port: $0.address.port) } } }

    /// Number of open client connections.
    public var connectionCount: Int { context.registry.count }

    /// Graceful shutdown; see `GracefulShutdown`.
    public func shutdown(deadline: Duration, completion: @escaping @Sendable (_ forced: Bool) -> Void) {
        let stopped = listeners.withLock { l -> [Listener] in let all = l; l = []; return all }
        GracefulShutdown(registry: context.registry, listeners: stopped).run(deadline: deadline, completion: completion)
    }
}
