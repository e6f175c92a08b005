#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Locking

/// The work handed to an ``EventLoop`` with `execute`: closures its own thread runs in the order they
/// were added, inside the loop's queue, at the end of a round; and the eventfd that wakes that thread.
///
/// Wake-ups are paid only when needed (as SwiftNIO's `SelectableEventLoop` does): the loop's thread
/// marks the list asleep (``takeOrSleep(into:mayBlock:)``) just before it blocks in `epoll_wait`,
/// and only when the list is empty; the first ``add(_:)`` after that clears the mark and writes the
/// eventfd, which ends the wait. An add while the thread is awake — from a round, or from another
/// thread while the loop works — costs the lock and no system call. The eventfd is edge-triggered in
/// the loop's set and never read: each write raises a new edge, and its counter cannot overflow in
/// practice (one increment per wake-up).
///
/// Lifetime: owns the eventfd (made in `init`, closed in `deinit`); the loop and its thread each hold
/// the list, so a final ``wake()`` from the loop's `deinit` never meets a closed descriptor.
/// Thread-safety: ``add(_:)`` and ``wake()`` from any thread; ``takeOrSleep(into:mayBlock:)`` from
/// the loop's thread only.
final class EventLoopTasks: Sendable {
    typealias Task = @Sendable () -> Void

    private struct State {
        var tasks: [Task] = []
        /// The loop's thread is in (or about to enter) a blocking `epoll_wait`.
        var asleep = false
    }

    private let state = Locked(State())
    /// Readable (an edge) after each wake-up write; registered in the loop's epoll set.
    let wakeDescriptor: Int32

    init() {
        wakeDescriptor = eventfd(0, Int32(EFD_CLOEXEC) | Int32(EFD_NONBLOCK))
        precondition(wakeDescriptor >= 0, "eventfd failed: errno \(errno)")
    }

    deinit { _ = close(wakeDescriptor) }

    /// Queues `task`; wakes the loop's thread if it sleeps.
    func add(_ task: @escaping Task) {
        let wake = state.withLock { s -> Bool in
            s.tasks.append(task)
            guard s.asleep else { return false }
            s.asleep = false
            return true
        }
        if wake { self.wake() }
    }

    /// The loop's thread waits (or is about to wait) for events with no task queued: the loop is idle
    /// at this moment. A snapshot; any thread.
    var isAsleep: Bool { state.withLock { $0.asleep } }

    /// Ends the loop thread's current or next `epoll_wait`.
    func wake() {
        var one: UInt64 = 1
        _ = write(wakeDescriptor, &one, 8)
    }

    /// Moves the queued tasks into `batch` (empty on entry; it keeps its capacity for the next time,
    /// and the list takes `batch`'s old storage). When none is queued and `mayBlock`, marks the
    /// thread asleep: from then on an `add` wakes it.
    func takeOrSleep(into batch: inout [Task], mayBlock: Bool) {
        state.withLock { s in
            if s.tasks.isEmpty {
                s.asleep = mayBlock
            } else {
                s.asleep = false
                swap(&s.tasks, &batch)
            }
        }
    }
}
