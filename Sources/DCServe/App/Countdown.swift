import Locking

/// Calls `done` once `count` arrivals happened; `forced` is true if any arrival was forced.
/// Arrivals come from server shutdown callbacks on arbitrary queues, hence the lock.
final class Countdown: Sendable {
    private let state: Locked<(left: Int, forced: Bool)>
    private let done: @Sendable (Bool) -> Void

    init(_ count: Int, done: @escaping @Sendable (Bool) -> Void) {
        state = Locked((count, false))
        self.done = done
        if count == 0 { done(false) }
    }

    func arrive(forced: Bool) {
        let result: Bool? = state.withLock { s in
            s.left -= 1
            s.forced = s.forced || forced
            return s.left == 0 ? s.forced : nil
        }
        if let result { done(result) }
    }
}
