import Dispatch
import Synchronization

/// Something whose socket an `EventLoop` watches: a server connection, an upstream client
/// connection, ... The loop holds each registered member strongly until it deregisters.
///
/// Contract: the loop calls every method on its `queue` only. `id` must come from
/// `EventLoopMemberID.next()` (one process-wide allocator, so members of different kinds never
/// collide on a shared loop) and must not change while registered.
public protocol EventLoopMember: AnyObject {
    /// This member's id (from `EventLoopMemberID.next()`); epoll events carry it instead of the
    /// descriptor, so an event for a member that has left the loop is dropped.
    var id: UInt64 { get }
    /// One readiness edge: `mask` holds epoll event bits (`EPOLLIN`, `EPOLLOUT`, `EPOLLRDHUP`, ...).
    /// Registration is edge-triggered: the member must remember readiness it does not act on now.
    func handleEvents(_ mask: UInt32)
    /// Called periodically (the loop's sweep) with the current time: act on a passed deadline.
    func checkDeadline(_ now: DispatchTime)
    /// Optional two-phase form of `handleEvents` (the server's plain-TCP connections): take the edges
    /// and read at most once without handling; true when the loop must call `finishPrefetch()` once
    /// every ready member of the round has been read. Default: `handleEvents(mask)`, false.
    func prefetch(_ mask: UInt32) -> Bool
    /// Second phase of `prefetch`. Default: nothing.
    func finishPrefetch()
    /// Called after `EventLoop.scheduleRead(self)`: read input that may be waiting. Default: nothing.
    func readPending()
    /// Called at the end of the round after `EventLoop.deferFlush(self)` returned true: write what
    /// is pending. Default: nothing.
    func flushDeferred()
}

extension EventLoopMember {
    public func prefetch(_ mask: UInt32) -> Bool { handleEvents(mask); return false }
    public func finishPrefetch() {}
    public func readPending() {}
    public func flushDeferred() {}
}

/// The process-wide allocator of `EventLoopMember.id`s. Thread-safe (one atomic). Never returns 0.
public enum EventLoopMemberID {
    private static let counter = Atomic<UInt64>(0)

    public static func next() -> UInt64 { counter.add(1, ordering: .relaxed).newValue }
}
