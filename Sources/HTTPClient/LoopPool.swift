import Dispatch
import HTTPCore

/// What every loop's pool of one client shares: settings, server selection, the TLS context, the name
/// resolver. Immutable (the selector and the resolver lock themselves).
final class ClientShared: Sendable {
    let configuration: HTTPClientConfiguration
    let selector: ServerSelector
    let tlsContext: Result<TLSClientContext, any Error>
    let connectTimeout: UInt64
    let sendTimeout: UInt64
    let readTimeout: UInt64
    let continueTimeout: UInt64
    let idleTimeout: UInt64
    let resolver: UpstreamNameResolver

    init(configuration: HTTPClientConfiguration, resolver: UpstreamNameResolver) {
        self.configuration = configuration
        self.resolver = resolver
        selector = ServerSelector(servers: configuration.servers, failureBackoff: configuration.failureBackoff)
        tlsContext = Result { try TLSClientContext(configuration: configuration.tls ?? TLSClientConfiguration()) }
        connectTimeout = configuration.connectTimeout.nanosecondsForDeadline
        sendTimeout = configuration.sendTimeout.nanosecondsForDeadline
        readTimeout = configuration.readTimeout.nanosecondsForDeadline
        continueTimeout = configuration.expectContinueTimeout.nanosecondsForDeadline
        idleTimeout = configuration.idleTimeout.nanosecondsForDeadline
    }
}

/// One event loop's keep-alive pool of one client: idle connections per server (most recently used
/// first), capped at `maxIdleConnectionsPerLoop` per server, each closed after `idleTimeout`.
///
/// Thread-safety: used on `loop.queue` only, hence `@unchecked Sendable`. Lifetime: as long as the
/// client (idle connections are registered on the loop and hold their pool).
final class LoopPool: @unchecked Sendable {
    let loop: EventLoop
    let shared: ClientShared
    /// Idle connections per server this pool has used (a handful of entries: searched linearly, so a
    /// request costs no hashing and no dictionary accessor, whose coroutine frames were allocated).
    private var idle: [(server: UpstreamServer, connections: [UpstreamConnection])] = []

    private func idleIndex(_ server: UpstreamServer) -> Int? { idle.firstIndex { $0.server == server } }
    /// Read buffer shared by this loop's connections (each read copies out what it got).
    let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)

    init(loop: EventLoop, shared: ClientShared) {
        self.loop = loop
        self.shared = shared
    }

    deinit { scratch.deallocate() }

    /// Runs `context` on an idle connection to the next server, or on a new one. `fresh`: never an
    /// idle one (the retry after a reused connection died). On `loop.queue`.
    func start(_ context: ExchangeContext, server chosen: UpstreamServer? = nil, fresh: Bool = false) {
        guard !context.isDone else { return }
        guard let server = chosen ?? shared.selector.next(excluding: context.failedServers) else {
            context.fail(.noServerAvailable)
            return
        }
        if !fresh {
            // Popped in place (a copy of the list would be made per request otherwise).
            if let i = idleIndex(server) {
                while let connection = idle[i].connections.popLast() {
                    if connection.isUsableWhenIdle(probe: !context.isReplayable) {
                        connection.begin(context)
                        return
                    }
                    connection.close()
                }
            }
        }
        let connection = UpstreamConnection(pool: self, server: server)
        connection.begin(context)
        connection.connect()
    }

    /// A connect to `server` failed: try another server this exchange has not failed on, else fail.
    func connectFailed(_ context: ExchangeContext, server: UpstreamServer, error: HTTPClientError) {
        shared.selector.markFailed(server)
        context.failedServers.insert(server)
        if !context.isDone, let next = shared.selector.next(excluding: context.failedServers) {
            start(context, server: next)
        } else {
            context.fail(error)
        }
    }

    /// Takes back a connection whose exchange completed cleanly; closes it when the pool is full.
    func release(_ connection: UpstreamConnection) {
        let i = idleIndex(connection.server) ?? {
            idle.append((connection.server, []))
            return idle.count - 1
        }()
        guard idle[i].connections.count < shared.configuration.maxIdleConnectionsPerLoop else {
            connection.close()
            return
        }
        idle[i].connections.append(connection)
        connection.becomeIdle(until: loop.now.uptimeNanoseconds &+ shared.idleTimeout)
    }

    /// Forgets a connection that closed (idle or not).
    func remove(_ connection: UpstreamConnection) {
        guard let i = idleIndex(connection.server),
              let j = idle[i].connections.firstIndex(where: { $0 === connection }) else { return }
        idle[i].connections.remove(at: j)
    }

    /// Number of idle connections (for tests and metrics). On `loop.queue`.
    var idleCount: Int { idle.reduce(0) { $0 + $1.connections.count } }

    /// Closes every idle connection. On `loop.queue`.
    func closeIdle() {
        let all = idle.flatMap(\.connections)
        idle.removeAll()
        for connection in all { connection.close() }
    }
}

extension Duration {
    /// Nanoseconds for a deadline, clamped to 0...UInt64.max / 4 (no overflow when added to uptime).
    var nanosecondsForDeadline: UInt64 {
        let (seconds, attoseconds) = components
        if seconds < 0 { return 0 }
        if seconds > 1_000_000_000 { return UInt64.max / 4 }
        return UInt64(seconds) * 1_000_000_000 + UInt64(max(0, attoseconds / 1_000_000_000))
    }
}
