import Synchronization

/// A fixed set of event loops, and where new members go (`nextLoop`).
/// Thread-safety: immutable array plus an atomic counter.
public final class EventLoopGroup: Sendable {
    public let loops: [EventLoop]
    private let next = Atomic<Int>(0)

    public init(count: Int, sweepInterval: Duration) {
        loops = (0..<max(1, count)).map { EventLoop(index: $0, sweepInterval: sweepInterval) }
        for loop in loops { loop.group = self }
    }

    /// Where a long-lived member that is free to move (a tunnel, whose sockets are out of every
    /// loop when it starts) should live: the first loop before `loop` in the group that is idle or
    /// was busy less than half of its last load window, else `loop`. Light load thus gathers on the
    /// first loops, whose rounds then serve more sockets per wake-up (each wake-up of a loop's
    /// thread costs a thread switch, more than the little work a small message needs). Any thread.
    public func gatheringLoop(from loop: EventLoop) -> EventLoop {
        for candidate in loops {
            if candidate === loop { break }
            if candidate.isIdle || candidate.recentLoadPercent < EventLoopGroup.gatheringLoadPercent { return candidate }
        }
        return loop
    }

    /// A loop busier than this (percent of its last load window) takes no more gathering members.
    static let gatheringLoadPercent = 50

    /// The loop for a new member: the next one round-robin (connections whose load is unknown when
    /// they arrive stay evenly spread; see ``gatheringLoop(from:)`` for tunnels). Any thread.
    public func nextLoop() -> EventLoop {
        let i = next.add(1, ordering: .relaxed).oldValue
        return loops[i % loops.count]
    }
}
