import Foundation

/// Mutable state shared across threads, guarded by a lock: the one synchronisation primitive of this
/// module (package-visible: DictionaryClient uses it too).
///
/// Why not `Synchronization.Mutex`: on Linux it locks with futexes inside the (uninstrumented) Swift
/// runtime, so ThreadSanitizer cannot see its happens-before edges and reports false races on every
/// contended `withLock` (observed with swift 6.3.1). `NSLock` is a pthread mutex, which TSan
/// understands, so a TSan run of this module reports only real races.
///
/// Safety: `state` is only reachable inside `withLock`, which holds the lock for the whole closure;
/// hence `@unchecked Sendable` is sound for `Sendable` state. Do not call `withLock` re-entrantly.
package final class LockedState<State: Sendable>: @unchecked Sendable {
    private var state: State
    private let lock = NSLock()

    package init(_ state: State) { self.state = state }

    package func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
