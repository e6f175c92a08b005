import Dispatch
import HTTPCore
import Locking

/// The upstream HTTP/1.1 client of one upstream (its servers share one configuration): exchanges
/// run on the caller's event loop, each loop keeping its own keep-alive pool per server, so an
/// upstream connection lives on the same loop as the server connection it serves (no thread hop).
///
/// Thread-safety: `execute` may be called from any thread; everything else happens on loop queues.
/// Lifetime: pools live as long as the client; `closeIdleConnections()` closes what they hold.
public final class HTTPClient: Sendable {
    public let configuration: HTTPClientConfiguration
    private let group: EventLoopGroup
    private let shared: ClientShared
    private let pools: Locked<[ObjectIdentifier: LoopPool]>
    /// This client's key for its pool in each loop's own table (``EventLoop/localObject(for:)``): an
    /// exchange started on its loop finds the pool there, without the lock both loops share. `pools`
    /// keeps each pool alive; the table does not retain it.
    private let localKey = EventLoop.makeLocalKey()

    /// `loops`: where exchanges run when `execute` is not given a loop (normally the server's group).
    /// A TLS configuration that cannot be loaded (bad CA file) makes every https exchange fail with
    /// `connectFailed(errno: EPROTO)`; validate it beforehand with `TLSClientContext(configuration:)`.
    /// `resolver`: where server names (not address literals) are looked up and cached.
    public init(configuration: HTTPClientConfiguration, loops: EventLoopGroup,
                resolver: UpstreamNameResolver = .shared) {
        self.configuration = configuration
        group = loops
        shared = ClientShared(configuration: configuration, resolver: resolver)
        pools = Locked([:])
    }

    /// Runs one exchange on `loop` (the caller's loop; nil → the group's next loop). The delegate's
    /// methods are called on that loop's queue. Returns a handle whose `cancel()` ends the exchange.
    /// Called on `loop`'s queue (a handler on the request's loop), the exchange starts inline: the
    /// request is written at once, not after the loop's current batch; the delegate may then be
    /// called (e.g. `didFail(.noServerAvailable)`) before `execute` returns.
    @discardableResult
    public func execute(_ request: HTTPClientRequest, on loop: EventLoop?, delegate: any HTTPClientResponseDelegate) -> HTTPClientExchange {
        let loop = loop ?? group.nextLoop()
        let pool = self.pool(for: loop)
        let context = ExchangeContext(request: request, delegate: delegate, loop: loop)
        let exchange = HTTPClientExchange(context: context)
        if loop.isCurrent {
            pool.start(context)
        } else {
            loop.execute { pool.start(context) }
        }
        return exchange
    }

    /// Closes every idle pooled connection (e.g. at shutdown). Asynchronous, on each loop.
    public func closeIdleConnections() {
        for pool in pools.withLock({ Array($0.values) }) {
            pool.loop.execute { pool.closeIdle() }
        }
    }

    /// Idle pooled connections on `loop` (for tests and metrics). Call on `loop.queue`.
    public func idleConnectionCount(on loop: EventLoop) -> Int {
        pool(for: loop).idleCount
    }

    private func pool(for loop: EventLoop) -> LoopPool {
        let onLoop = loop.isCurrent
        if onLoop, let local = loop.localObject(for: localKey) { return unsafeDowncast(local, to: LoopPool.self) }
        let pool = pools.withLock { pools in
            if let pool = pools[ObjectIdentifier(loop)] { return pool }
            let pool = LoopPool(loop: loop, shared: shared)
            pools[ObjectIdentifier(loop)] = pool
            return pool
        }
        if onLoop { loop.setLocalObject(pool, for: localKey) }
        return pool
    }

    deinit {
        // The loops' tables drop the key (no one reads it again: keys are never reused).
        let key = localKey
        for pool in pools.withLock({ Array($0.values) }) {
            let loop = pool.loop
            loop.execute { loop.setLocalObject(nil, for: key) }
        }
    }
}
