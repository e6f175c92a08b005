import Dispatch
import HTTPCore
import Locking

/// What every connection of one server shares. Immutable after init except the atomics and the
/// registry's mutex-protected table, so `Sendable` as checked.
final class ServerContext: Sendable {
    let configuration: ServerConfiguration
    let handler: any HTTPHandler
    let accessLog: AccessLog
    let serverLine: [UInt8]?
    let registry: ConnectionRegistry
    /// The event loops connections are spread over (see `EventLoop`).
    let loops: EventLoopGroup

    init(configuration: ServerConfiguration, handler: any HTTPHandler, accessLog: AccessLog) {
        self.configuration = configuration
        self.handler = handler
        self.accessLog = accessLog
        self.serverLine = configuration.serverName.map { Array("Server: \($0)\r\n".utf8) }
        self.registry = ConnectionRegistry(maxConnections: configuration.maxConnections)
        self.loops = EventLoopGroup(count: configuration.eventLoopCount, sweepInterval: configuration.deadlineSweepInterval)
    }

    /// A connection's id: unique in the process (it is also the connection's `EventLoopMember.id`).
    func makeConnectionID() -> UInt64 { EventLoopMemberID.next() }
}

/// The set of open connections, for the connection limit and graceful shutdown.
/// Thread-safety: all state behind one `Locked`; callbacks run outside the lock.
final class ConnectionRegistry: Sendable {
    private struct State {
        var connections: [ObjectIdentifier: Connection] = [:]
        var onEmpty: (@Sendable () -> Void)?
    }
    private let state = Locked(State())
    let maxConnections: Int

    init(maxConnections: Int) { self.maxConnections = maxConnections }

    /// Adds `connection` unless the limit is reached; false means the caller must refuse it.
    func add(_ connection: Connection) -> Bool {
        state.withLock { s in
            guard s.connections.count < maxConnections else { return false }
            s.connections[ObjectIdentifier(connection)] = connection
            return true
        }
    }

    func remove(_ connection: Connection) {
        let callback: (@Sendable () -> Void)? = state.withLock { s in
            s.connections.removeValue(forKey: ObjectIdentifier(connection))
            if s.connections.isEmpty, let cb = s.onEmpty { s.onEmpty = nil; return cb }
            return nil
        }
        callback?()
    }

    var count: Int { state.withLock { $0.connections.count } }

    var all: [Connection] { state.withLock { Array($0.connections.values) } }

    /// Calls `callback` once the registry is empty (at once if it is).
    func whenEmpty(_ callback: @escaping @Sendable () -> Void) {
        let now: Bool = state.withLock { s in
            if s.connections.isEmpty { return true }
            s.onEmpty = callback
            return false
        }
        if now { callback() }
    }
}
