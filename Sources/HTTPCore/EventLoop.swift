#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Dispatch
import Foundation
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
/// Lifetime: the thread holds the loop weakly; when the last reference goes, `deinit` wakes the
/// thread (the task list's eventfd, in the set), which closes the epoll set and ends.
/// Thread-safety: `execute` may be called from any thread. Every mutable property is used only on
/// `queue` (the rounds, the sweep timer, and `register`/`deregister`/`scheduleRead`/`deferFlush`
/// whose callers run on `queue`); the class is `@unchecked Sendable` on that basis. Members assigned
/// to this loop use `queue` as their own.
public final class EventLoop: @unchecked Sendable {
    /// The loop's serial queue: every member's I/O and callbacks run here.
    public let queue: DispatchQueue
    /// Position in its `EventLoopGroup` (0-based).
    public let index: Int
    /// The group this loop belongs to (nil for a loop made on its own). Set once by the group's
    /// `init`, before the loop is handed to anyone.
    public fileprivate(set) weak var group: EventLoopGroup?
    private let epollDescriptor: Int32
    /// Work for the loop's thread (``execute(_:)``); its eventfd is in the set with id 0, never a member's.
    private let tasks = EventLoopTasks()
    /// The tasks of the current pass (swapped with the list's storage, so neither reallocates).
    private var taskBatch: [EventLoopTasks.Task] = []
    private var sweepTimer: DispatchSourceTimer?
    private var members: [UInt64: any EventLoopMember] = [:]
    /// The thread's event buffer (read on `queue` during a round; freed by the thread when it ends).
    private let events: UnsafeMutablePointer<epoll_event>
    private static let batchSize = 256
    /// Bound on the passes over queued tasks in one round; what is left runs in the next round, which
    /// then polls the set without blocking.
    private static let taskPasses = 16
    /// Members read in the current round, to be handled once all ready sockets are read.
    private var roundReads: [any EventLoopMember] = []
    /// Members whose writes wait for the end of the current round (``deferFlush(_:)``).
    private var deferredFlushes: [any EventLoopMember] = []
    /// The batch being flushed or read: swapped with `deferredFlushes`/`pendingReads`, so both keep
    /// their storage from round to round (no array allocated per round).
    private var spareBatch: [any EventLoopMember] = []
    /// Members whose reading resumed while input may be pending; read after the current round.
    private var pendingReads: [any EventLoopMember] = []
    private var inBatch = false
    /// When the current round of events was harvested (valid while `inBatch`).
    private var batchTime = DispatchTime.now()
    private var drainScheduled = false
    /// Percent of the last load window the loop's thread spent in rounds (any thread reads it).
    private let recentBusyPercent = Atomic<Int>(0)
    /// The current load window: when it began and the round time in it (uptime ns; loop thread only).
    private var loadWindowStart = DispatchTime.now().uptimeNanoseconds
    private var loadWindowBusy: UInt64 = 0
    private static let loadWindow: UInt64 = 100_000_000

    /// `sweepInterval`: how often deadlines are checked.
    public init(index: Int, sweepInterval: Duration) {
        self.index = index
        queue = DispatchQueue(label: "dcserve.loop.\(index)")
        epollDescriptor = epoll_create1(Int32(EPOLL_CLOEXEC))
        precondition(epollDescriptor >= 0, "epoll_create1 failed: errno \(errno)")
        var wake = epoll_event()
        wake.events = EPOLLIN.rawValue | EPOLLET.rawValue
        wake.data.u64 = 0
        precondition(epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, tasks.wakeDescriptor, &wake) == 0, "epoll_ctl failed: errno \(errno)")
        events = .allocate(capacity: EventLoop.batchSize)
        let t = DispatchSource.makeTimerSource(queue: queue)
        let interval = DispatchTimeInterval.nanoseconds(sweepInterval.clampedNanoseconds)
        t.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(10))
        t.setEventHandler { [weak self] in self?.sweepDeadlines() }
        sweepTimer = t
        queue.setSpecific(key: EventLoop.currentKey, value: ObjectIdentifier(self))
        t.resume()
        EventLoopThread.start(self, name: "dcserve.loop.\(index)", epoll: epollDescriptor, tasks: tasks, events: events,
                              capacity: EventLoop.batchSize)
    }

    deinit {
        // Members hold their loop strongly, so none is left here. The thread closes the epoll set
        // and frees the event buffer once it sees the loop gone; queued tasks are dropped.
        sweepTimer?.cancel()
        tasks.wake()
    }

    /// Runs `task` on the loop's thread, inside `queue`, after the tasks queued before it (FIFO from
    /// any one thread). Called during a round (from a member, or from a task), it runs at the end of
    /// that round with no wake-up; from another thread, it wakes the loop's thread if that sleeps.
    /// Thread-safe.
    public func execute(_ task: @escaping @Sendable () -> Void) {
        tasks.add(task)
    }

    /// The loop's thread waits for events with nothing queued: the loop is idle at this moment (a
    /// snapshot; any thread).
    public var isIdle: Bool { tasks.isAsleep }

    /// Percent of the last measured window (about 100 ms of the loop's activity) its thread spent
    /// serving rounds; stale while the loop sleeps (see `isIdle`). Any thread.
    public var recentLoadPercent: Int { recentBusyPercent.load(ordering: .relaxed) }

    /// One round, on `queue` (called by the loop's thread through `queue.sync`): serves the `count`
    /// events the thread harvested into `events`, then the queued tasks. Returns false when the
    /// thread may block in its next wait (nothing left to do, and the task list marked asleep), true
    /// when it must only poll (work left over by the bounds).
    fileprivate func runRound(_ count: Int) -> Bool {
        inBatch = true
        batchTime = DispatchTime.now()
        // Read every ready socket first, then handle what was read: requests read in one round
        // then share one freshness check (FileSnapshotCache, InputSequence).
        for i in 0..<count {
            let e = events[i]
            guard let member = members[e.data.u64] else { continue }
            if member.prefetch(e.events) { roundReads.append(member) }
        }
        for member in roundReads { member.finishPrefetch() }
        roundReads.removeAll(keepingCapacity: true)
        settleRound()
        let more = runTasks()
        inBatch = false
        noteRoundTime(since: batchTime.uptimeNanoseconds)
        return more
    }

    /// Adds a round's duration to the load window, and closes the window when it is long enough.
    private func noteRoundTime(since start: UInt64) {
        let end = DispatchTime.now().uptimeNanoseconds
        loadWindowBusy &+= end &- start
        let length = end &- loadWindowStart
        guard length >= EventLoop.loadWindow else { return }
        recentBusyPercent.store(Int(min(100, loadWindowBusy * 100 / length)), ordering: .relaxed)
        loadWindowStart = end
        loadWindowBusy = 0
    }

    /// Runs the queued tasks, pass by pass (a task may queue more), each pass settled like a round.
    /// Marks the list asleep when it finds it empty with nothing else pending; true if work is left.
    private func runTasks() -> Bool {
        for _ in 0..<EventLoop.taskPasses {
            tasks.takeOrSleep(into: &taskBatch, mayBlock: pendingReads.isEmpty)
            if taskBatch.isEmpty { return !pendingReads.isEmpty }
            for task in taskBatch { task() }
            taskBatch.removeAll(keepingCapacity: true)
            settleRound()
        }
        return true
    }

    /// Marks each loop's queue with the loop's identity (see `isCurrent`).
    nonisolated(unsafe) private static let currentKey = DispatchSpecificKey<ObjectIdentifier>()

    /// True when the caller runs on this loop's `queue` (so work for the loop can be done inline
    /// instead of through `execute`, which would wait until the end of the current round).
    public var isCurrent: Bool { DispatchQueue.getSpecific(key: EventLoop.currentKey) == ObjectIdentifier(self) }

    /// The time for setting deadlines: during a round, when it was harvested (at most
    /// about a millisecond old, and deadlines are seconds), which saves a clock read per request;
    /// otherwise the clock. On `queue`.
    public var now: DispatchTime { inBatch ? batchTime : DispatchTime.now() }

    /// Adds `member`'s socket to the epoll set (`EPOLLIN | EPOLLOUT | EPOLLRDHUP`, edge-triggered);
    /// the loop keeps `member` until `deregister`. On `queue`. False if the kernel refused it.
    public func register(_ member: any EventLoopMember, descriptor: Int32) -> Bool {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | EPOLLOUT.rawValue | EPOLLRDHUP.rawValue | EPOLLET.rawValue
        event.data.u64 = member.id
        guard epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, descriptor, &event) == 0 else { return false }
        members[member.id] = member
        return true
    }

    /// Removes a member; call before its descriptor is closed. On `queue`.
    public func deregister(_ member: any EventLoopMember, descriptor: Int32) {
        if members.removeValue(forKey: member.id) != nil {
            var event = epoll_event()
            _ = epoll_ctl(epollDescriptor, EPOLL_CTL_DEL, descriptor, &event)
        }
    }

    /// Asks for `member.readPending()` after the current round (or soon, outside a round), for a
    /// member that resumed reading while input may be waiting: with edge triggering no new event
    /// would announce it. On `queue`.
    public func scheduleRead(_ member: any EventLoopMember) {
        pendingReads.append(member)
        if !inBatch && !drainScheduled {
            drainScheduled = true
            execute { self.drainScheduled = false; self.drainPendingReads() }
        }
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
        guard inBatch else { return false }
        deferredFlushes.append(member)
        return true
    }

    /// Largest pending output a member defers with ``deferFlush(_:)``; more is written at once.
    public static let deferredWriteLimit = 16 << 10

    /// Ends a round (or a pass over its tasks): the reads resumed during it, then the deferred
    /// writes, until neither is left (a write that completes a response may resume reading, and a
    /// read may answer and write again). Bounded: reads still pending after 16 passes wait for the
    /// next round (the thread then polls instead of blocking).
    private func settleRound() {
        for _ in 0..<16 {
            drainPendingReads()
            runDeferredFlushes()
            if pendingReads.isEmpty { return }
        }
    }

    /// Runs the deferred writes (a write may complete a response and queue more: repeated until none).
    private func runDeferredFlushes() {
        while !deferredFlushes.isEmpty {
            var batch = spareBatch
            spareBatch = []
            swap(&batch, &deferredFlushes)
            for member in batch { member.flushDeferred() }
            batch.removeAll(keepingCapacity: true)
            spareBatch = batch
        }
    }

    /// Reads of resumed members, at most 8 passes (what is left stays in `pendingReads`).
    private func drainPendingReads() {
        var rounds = 0
        while !pendingReads.isEmpty && rounds < 8 {
            var batch = spareBatch
            spareBatch = []
            swap(&batch, &pendingReads)
            for c in batch { c.readPending() }
            batch.removeAll(keepingCapacity: true)
            spareBatch = batch
            rounds += 1
        }
    }

    private func sweepDeadlines() {
        guard !members.isEmpty else { return }
        let now = DispatchTime.now()
        for member in Array(members.values) { member.checkDeadline(now) }
    }
}

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


/// The thread of an ``EventLoop``: waits in `epoll_wait` on the loop's set and serves each round on
/// the loop's queue (`queue.sync`). Holds the loop weakly: once the loop is gone (its `deinit`
/// wakes it), it closes the epoll set, frees the event buffer, releases the task list and ends.
private enum EventLoopThread {
    /// Weak box, so the thread never keeps its loop alive.
    private final class WeakLoop: @unchecked Sendable {
        weak var loop: EventLoop?
        init(_ loop: EventLoop) { self.loop = loop }
    }

    /// What the thread owns (the epoll set, the event buffer) or shares (the task list, whose
    /// eventfd the loop's `deinit` writes), sendable to the thread.
    private struct Owned: @unchecked Sendable {
        let epoll: Int32
        let tasks: EventLoopTasks
        let events: UnsafeMutablePointer<epoll_event>
        let capacity: Int32
    }

    static func start(_ loop: EventLoop, name: String, epoll: Int32, tasks: EventLoopTasks, events: UnsafeMutablePointer<epoll_event>,
                      capacity: Int) {
        let weak = WeakLoop(loop)
        let owned = Owned(epoll: epoll, tasks: tasks, events: events, capacity: Int32(capacity))
        Thread { run(weak, owned, name: name) }.start()
    }

    /// What one round serves: set by the thread before it enters the queue, read after.
    private final class Round: @unchecked Sendable {  // used by the loop's thread only
        var loop: EventLoop?
        var count = 0
        /// The round left work: poll, do not block.
        var more = false
    }

    private static func run(_ weak: WeakLoop, _ owned: Owned, name: String) {
        dcserve_set_thread_name(name)
        // One work item for every round: `queue.sync` with a closure boxes it (a heap allocation per
        // round); a work item's block is made once and may run any number of times (it is never waited on).
        let round = Round()
        let item = DispatchWorkItem { round.more = round.loop?.runRound(round.count) ?? false }
        var count: Int32 = 0
        // The first round (no events) runs what was queued before the thread started, and marks the
        // task list asleep.
        while serve(weak, round, item, count: count) {
            count = epoll_wait(owned.epoll, owned.events, owned.capacity, round.more ? 0 : -1)
            if count < 0 {
                precondition(errno == EINTR, "epoll_wait failed: errno \(errno)")
                count = 0
            }
        }
        close(owned.epoll)
        owned.events.deallocate()
    }

    /// Serves one round unless the loop is gone (false). A function of its own so that the strong
    /// reference to the loop ends before the thread waits again.
    private static func serve(_ weak: WeakLoop, _ round: Round, _ item: DispatchWorkItem, count: Int32) -> Bool {
        guard let loop = weak.loop else { return false }
        round.loop = loop
        round.count = Int(count)
        loop.queue.sync(execute: item)
        round.loop = nil
        return true
    }
}
