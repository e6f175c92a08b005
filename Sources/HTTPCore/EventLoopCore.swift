#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Dispatch
import Synchronization

/// What an ``EventLoop`` works with, apart from the handle everyone retains: the epoll set and the
/// event buffer, the members, the queued tasks, and the state of the current round.
///
/// Ownership: the loop's handle (`EventLoop`), its thread (`EventLoopThread`) and its sweep timer's
/// handler each hold the core strongly; the core refers to no handle. The core owns the epoll set
/// and the event buffer (closed and freed in `deinit`, once the thread has ended and the handle and
/// the timer are gone) and holds each registered member strongly until it deregisters (members that
/// hold their loop's handle thus keep the loop alive while registered, as they must).
/// Stopping: the handle's `deinit` calls ``stop()``; the thread sees ``isStopped`` when it next
/// wakes (the task list's eventfd, in the set, ends its wait) and ends without serving another round.
///
/// Thread-safety: `@unchecked Sendable` on these grounds. Every mutable property is touched only on
/// the loop's `queue`: by the rounds (which the thread runs inside `queue.sync`), by the sweep timer
/// (a source on `queue`), and by the handle's `register`/`deregister`/`scheduleRead`/`deferFlush`/
/// `now`, whose callers run on `queue`. `epollDescriptor` and `events` are immutable pointers: the
/// buffer's contents are written by the thread's `epoll_wait` (outside the queue) and read by the
/// round that same thread then runs. `tasks`, `recentBusyPercent` and `stopped` are thread-safe.
final class EventLoopCore: @unchecked Sendable {
    /// The loop's serial queue (the same object as the handle's `queue`).
    let queue: DispatchQueue
    let epollDescriptor: Int32
    /// Work for the loop's thread (`EventLoop.execute`); its eventfd is in the set with id 0, never a member's.
    let tasks = EventLoopTasks()
    /// The thread's event buffer: filled by `epoll_wait` on the thread, read by the round it runs next.
    let events: UnsafeMutablePointer<epoll_event>
    static let batchSize = 256
    /// Set once, by the handle's `deinit`: the thread ends at its next wake-up.
    private let stopped = Atomic<Bool>(false)
    /// The tasks of the current pass (swapped with the list's storage, so neither reallocates).
    private var taskBatch: [EventLoopTasks.Task] = []
    private var members: [UInt64: any EventLoopMember] = [:]
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
    /// What users keep per loop (``EventLoop/localObject(for:)``), unretained, by key.
    var locals: [UInt64: Unmanaged<AnyObject>] = [:]
    private(set) var inBatch = false
    /// When the current round of events was harvested (valid while `inBatch`).
    private(set) var batchTime = DispatchTime.now()
    private var drainScheduled = false
    /// Percent of the last load window the loop's thread spent in rounds (any thread reads it).
    let recentBusyPercent = Atomic<Int>(0)
    /// The current load window: when it began and the round time in it (uptime ns; loop thread only).
    private var loadWindowStart = DispatchTime.now().uptimeNanoseconds
    private var loadWindowBusy: UInt64 = 0
    private static let loadWindow: UInt64 = 100_000_000

    init(queue: DispatchQueue) {
        self.queue = queue
        epollDescriptor = epoll_create1(Int32(EPOLL_CLOEXEC))
        precondition(epollDescriptor >= 0, "epoll_create1 failed: errno \(errno)")
        var wake = epoll_event()
        wake.events = EPOLLIN.rawValue | EPOLLET.rawValue
        wake.data.u64 = 0
        precondition(epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, tasks.wakeDescriptor, &wake) == 0, "epoll_ctl failed: errno \(errno)")
        events = .allocate(capacity: EventLoopCore.batchSize)
    }

    deinit {
        close(epollDescriptor)
        events.deallocate()
    }

    /// Asks the thread to end: it sees ``isStopped`` once its current round or wait ends. Any thread.
    func stop() {
        stopped.store(true, ordering: .releasing)
        tasks.wake()
    }

    /// ``stop()`` was called. Any thread.
    var isStopped: Bool { stopped.load(ordering: .acquiring) }

    /// One round, on `queue` (called by the loop's thread through `queue.sync`): serves the `count`
    /// events the thread harvested into `events`, then the queued tasks. Returns false when the
    /// thread may block in its next wait (nothing left to do, and the task list marked asleep), true
    /// when it must only poll (work left over by the bounds).
    func runRound(_ count: Int) -> Bool {
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
        guard length >= EventLoopCore.loadWindow else { return }
        recentBusyPercent.store(Int(min(100, loadWindowBusy * 100 / length)), ordering: .relaxed)
        loadWindowStart = end
        loadWindowBusy = 0
    }

    /// Runs the queued tasks, pass by pass (a task may queue more), each pass settled like a round.
    /// Marks the list asleep when it finds it empty with nothing else pending; true if work is left.
    private func runTasks() -> Bool {
        for _ in 0..<EventLoopCore.taskPasses {
            tasks.takeOrSleep(into: &taskBatch, mayBlock: pendingReads.isEmpty)
            if taskBatch.isEmpty { return !pendingReads.isEmpty }
            for task in taskBatch { task() }
            taskBatch.removeAll(keepingCapacity: true)
            settleRound()
        }
        return true
    }

    /// See `EventLoop.register`. On `queue`.
    func register(_ member: any EventLoopMember, descriptor: Int32) -> Bool {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | EPOLLOUT.rawValue | EPOLLRDHUP.rawValue | EPOLLET.rawValue
        event.data.u64 = member.id
        guard epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, descriptor, &event) == 0 else { return false }
        members[member.id] = member
        return true
    }

    /// See `EventLoop.deregister`. On `queue`.
    func deregister(_ member: any EventLoopMember, descriptor: Int32) {
        if members.removeValue(forKey: member.id) != nil {
            var event = epoll_event()
            _ = epoll_ctl(epollDescriptor, EPOLL_CTL_DEL, descriptor, &event)
        }
    }

    /// See `EventLoop.scheduleRead`. On `queue`.
    func scheduleRead(_ member: any EventLoopMember) {
        pendingReads.append(member)
        if !inBatch && !drainScheduled {
            drainScheduled = true
            tasks.add { self.drainScheduled = false; self.drainPendingReads() }
        }
    }

    /// See `EventLoop.deferFlush`. On `queue`.
    func deferFlush(_ member: any EventLoopMember) -> Bool {
        guard inBatch else { return false }
        deferredFlushes.append(member)
        return true
    }

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

    /// The sweep timer's tick (on `queue`): each member checks its deadline.
    func sweepDeadlines() {
        guard !members.isEmpty else { return }
        let now = DispatchTime.now()
        for member in Array(members.values) { member.checkDeadline(now) }
    }
}
