#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization

/// One serial Dispatch queue that drives the I/O of many sockets (its `EventLoopMember`s: server
/// connections, upstream client connections, ...), and the work handed to it (`execute`).
///
/// Design: the loop owns an edge-triggered epoll set holding its members' sockets, and a thread of
/// its own that blocks in `epoll_wait` on that set — as an nginx worker does — without holding
/// `queue`. When events arrive, the thread enters `queue` synchronously (`queue.sync`: on an idle
/// queue the block runs on the calling thread, no hand-off) and serves the round inline: first one
/// read from every ready socket (`EventLoopMember.prefetch`), then the handling of what was read
/// (`finishPrefetch`), so requests read in one round share one file-freshness check (see
/// `InputSequence`); then the work queued with ``execute(_:)`` (by this round, or by other threads
/// meanwhile). Then it leaves the queue and waits again; under load that `epoll_wait` returns at
/// once with the next round. A wake-up therefore costs one thread switch and no libdispatch
/// machinery (no manager thread, no worker hand-off), and work the loop hands itself costs no
/// wake-up at all. Work put on `queue` directly (`queue.async`, `queue.sync`) still runs, between
/// rounds, on whichever thread Dispatch chooses: tests and slow paths may use it; hot paths use
/// `execute`. Deadlines are checked by one timer source per loop that sweeps its members (timeouts
/// are seconds; the sweep tick is a fraction of the shortest configured timeout), instead of one
/// timer source per member.
///
/// Small writes made while a round is handled wait for its end (`deferFlush`): the upstream requests
/// and client responses of one round then leave back to back, so each peer is woken once for the round
/// instead of once per write while this loop is still busy.
///
/// Sockets are registered once (`EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET`) and never modified:
/// a member remembers readiness edges itself and pauses reading by ignoring them
/// (see the server's `Connection.handleEvents`). Events carry the member's id, not its descriptor, so an event
/// harvested for a member that has closed since (its descriptor possibly reused) is dropped.
///
/// Ownership and lifetime: `EventLoop` is the handle everyone retains (members, connections,
/// clients), only strongly; its state lives in an `EventLoopCore`, which the handle, the loop's thread
/// (`EventLoopThread`) and the sweep timer's handler hold, and which refers to no handle. The loop
/// lives while anyone holds the handle; when the last reference goes, `deinit` cancels the sweep
/// timer and stops the core (a flag, then a write to the task list's eventfd, in the set): the thread
/// wakes, ends without another round and releases the core, which then closes the epoll set and frees
/// the event buffer. Queued tasks are dropped. Nothing may reference a handle weakly: the runtime
/// would give it a side table, and every retain and release of the loop (several per request) would
/// take the slow path.
/// Thread-safety: `execute`, `isCurrent`, `isIdle` and `recentLoadPercent` may be called from any
/// thread; the rest on `queue` (see `EventLoopCore`). The handle's own properties are immutable
/// after `init` (except `group`, set once by the group's `init` before the loop is handed to anyone);
/// the class is `@unchecked Sendable` on that basis. Members assigned to this loop use `queue` as
/// their own.
public final class EventLoop: @unchecked Sendable {
    /// The loop's serial queue: every member's I/O and callbacks run here.
    public let queue: DispatchQueue
    /// Position in its `EventLoopGroup` (0-based).
    public let index: Int
    /// The group this loop belongs to (nil for a loop made on its own). Set once by the group's
    /// `init`, before the loop is handed to anyone.
    public internal(set) weak var group: EventLoopGroup?
    private let core: EventLoopCore
    /// The loop's thread (see ``isCurrent``); it outlives the handle.
    private let thread: pthread_t
    private let sweepTimer: DispatchSourceTimer

    /// `sweepInterval`: how often deadlines are checked.
    public init(index: Int, sweepInterval: Duration) {
        self.index = index
        queue = DispatchQueue(label: "dcserve.loop.\(index)")
        let core = EventLoopCore(queue: queue)
        self.core = core
        let t = DispatchSource.makeTimerSource(queue: queue)
        let interval = DispatchTimeInterval.nanoseconds(sweepInterval.clampedNanoseconds)
        t.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(10))
        t.setEventHandler { core.sweepDeadlines() }
        sweepTimer = t
        thread = EventLoopThread.start(core, name: "dcserve.loop.\(index)")
        queue.setSpecific(key: EventLoop.currentKey, value: ObjectIdentifier(self))
        t.resume()
    }

    deinit {
        // Members that hold the loop keep it alive while registered, so none of those is left
        // here. The thread ends at its next wake-up and releases the core.
        sweepTimer.cancel()
        core.stop()
    }

    /// Runs `task` on the loop's thread, inside `queue`, after the tasks queued before it (FIFO from
    /// any one thread). Called during a round (from a member, or from a task), it runs at the end of
    /// that round with no wake-up; from another thread, it wakes the loop's thread if that sleeps.
    /// Thread-safe.
    public func execute(_ task: @escaping @Sendable () -> Void) {
        core.tasks.add(task)
    }

    /// The loop's thread waits for events with nothing queued: the loop is idle at this moment (a
    /// snapshot; any thread).
    public var isIdle: Bool { core.tasks.isAsleep }

    /// Percent of the last measured window (about 100 ms of the loop's activity) its thread spent
    /// serving rounds; stale while the loop sleeps (see `isIdle`). Any thread.
    public var recentLoadPercent: Int { core.recentBusyPercent.load(ordering: .relaxed) }

    /// Marks each loop's queue with the loop's identity (see `isCurrent`).
    nonisolated(unsafe) private static let currentKey = DispatchSpecificKey<ObjectIdentifier>()

    /// True when the caller runs on this loop's `queue` (so work for the loop can be done inline
    /// instead of through `execute`, which would wait until the end of the current round). Any thread.
    ///
    /// The loop's own thread runs loop code only inside `queue` (its rounds, through `queue.sync`),
    /// so that thread answers true at once, without Dispatch (also inside a `sync` on another queue
    /// made from a round: this loop's queue is still held); elsewhere (a block put on `queue` with
    /// `async`/`sync`, which Dispatch may run on any thread, or the sweep timer) the queue's
    /// specific value decides.
    public var isCurrent: Bool {
        pthread_self() == thread || DispatchQueue.getSpecific(key: EventLoop.currentKey) == ObjectIdentifier(self)
    }

    /// The time for setting deadlines: during a round, when it was harvested (at most
    /// about a millisecond old, and deadlines are seconds), which saves a clock read per request;
    /// otherwise the clock. On `queue`.
    public var now: DispatchTime { core.inBatch ? core.batchTime : DispatchTime.now() }

    /// Adds `member`'s socket to the epoll set (`EPOLLIN | EPOLLOUT | EPOLLRDHUP`, edge-triggered);
    /// the loop keeps `member` until `deregister`. On `queue`. False if the kernel refused it.
    public func register(_ member: any EventLoopMember, descriptor: Int32) -> Bool {
        core.register(member, descriptor: descriptor)
    }

    /// Removes a member; call before its descriptor is closed. On `queue`.
    public func deregister(_ member: any EventLoopMember, descriptor: Int32) {
        core.deregister(member, descriptor: descriptor)
    }

    /// Asks for `member.readPending()` after the current round (or soon, outside a round), for a
    /// member that resumed reading while input may be waiting: with edge triggering no new event
    /// would announce it. On `queue`.
    public func scheduleRead(_ member: any EventLoopMember) {
        core.scheduleRead(member)
    }

    /// Inside a round: queues `member.flushDeferred()` for the end of the current round and returns
    /// true, so the writes of every request and response handled in the round leave together (the
    /// peers — upstream servers, clients — wake once for the round instead of once per write while
    /// this loop still works). Outside a round: false, the caller writes now. A member asks once per
    /// round (it remembers that it asked). On `queue`.
    ///
    /// Members defer only small writes (at most ``deferredWriteLimit`` bytes pending): large bodies
    /// of a round sent back to back at its end overflow the peers' socket buffers (partial writes,
    /// waits for writability).
    public func deferFlush(_ member: any EventLoopMember) -> Bool {
        core.deferFlush(member)
    }

    /// Largest pending output a member defers with ``deferFlush(_:)``; more is written at once.
    public static let deferredWriteLimit = 16 << 10

    /// A key for ``localObject(for:)``, never handed out twice in the process.
    package static func makeLocalKey() -> UInt64 { localKeys.add(1, ordering: .relaxed).newValue }
    private static let localKeys = Atomic<UInt64>(0)

    /// The object a user of the loop keeps on it under `key` (an HTTP client's pool for this loop),
    /// found without a lock shared with the other loops. On `queue`. The loop does not retain it:
    /// whoever stores an object keeps it alive as long as its key may be read.
    package func localObject(for key: UInt64) -> AnyObject? {
        core.locals[key]?.takeUnretainedValue()
    }

    /// Stores (or, with nil, removes) the object under `key` (see ``localObject(for:)``). On `queue`.
    package func setLocalObject(_ object: AnyObject?, for key: UInt64) {
        core.locals[key] = object.map { Unmanaged.passUnretained($0) }
    }
}
