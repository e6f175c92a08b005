import Foundation

/// State guarded by a pthread mutex (`NSLock`, which ThreadSanitizer understands — see
/// DictionaryTransport's `LockedState` for why not `Synchronization.Mutex`).
///
/// Safety: `state` is only reachable inside `withLock`, which holds the lock for the whole closure,
/// so `@unchecked Sendable` is sound. Not re-entrant.
final class ClientLock<State>: @unchecked Sendable {
    private var state: State
    private let lock = NSLock()

    init(_ state: State) { self.state = state }

    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
