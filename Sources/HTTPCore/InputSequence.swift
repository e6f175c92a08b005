import Synchronization

/// A process-wide count of completed socket reads, for "was this request read before that check?"
///
/// Every connection takes the next number right after a read returns bytes (`next()`), and a
/// request carries the number of the last read before it was dispatched
/// (`HTTPServerRequest.receivedSequence`). A freshness check that loads `current()` *before* it
/// looks (say, an inotify `poll`) covers every request whose number is at most that value: those
/// reads had returned before the check began, so anything that changed before such a request was
/// sent is visible to the check. The counter's atomic order is what makes "at most" mean "before".
/// Thread-safe (one atomic).
public enum InputSequence {
    @usableFromInline static let counter = Atomic<UInt64>(0)

    /// The number for a read that has just returned. Never 0.
    @inlinable public static func next() -> UInt64 { counter.add(1, ordering: .acquiringAndReleasing).newValue }

    /// The number of the latest completed read.
    @inlinable public static func current() -> UInt64 { counter.load(ordering: .acquiring) }
}
