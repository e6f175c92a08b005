#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Dispatch
import Foundation
import Synchronization

/// One serial Dispatch queue that drives the I/O of many sockets (its `EventLoopMember`s: server
/// connections, upstream client connections, ...).
///
/// Design: the loop owns an edge-triggered epoll set holding its members' sockets, and a thread of
/// its own that blocks in `epoll_wait` on that set — as an nginx worker does — without holding
/// `queue`. When events arrive, the thread enters `queue` synchronously (`queue.sync`: on an idle
/// queue the block runs on the calling thread, no hand-off) and serves the round inline: first one
/// read from every ready socket (`EventLoopMember.prefetch`), then the handling of what was read
/// (`finishPrefetch`), so requests read in one round share one file-freshness check (see
/// `InputSequence`). Then it leaves the queue and waits again; under load that `epoll_wait` returns
/// at once with the next round. A wake-up therefore costs one thread switch and no libdispatch
/// machinery (no manager thread, no worker hand-off), and work others put on `queue` (`queue.async`)
/// runs between rounds, never behind a wait for socket events. Deadlines are checked by one timer
/// source per loop that sweeps its members (timeouts are seconds; the sweep tick is a fraction of
/// the shortest configured timeout), instead of one timer source per member.
///
/// Small writes made while a round is handled wait for its end (`deferFlush`): the upstream requests
/// and client responses of one round then leave back to back, so each peer is woken once for the round
/// instead of once per write while this loop is still busy (bench/proxy: the loopback deliveries'
/// wake-ups cost dcserve ~2 µs of kernel time per proxied request before, nginx ~0.8 µs).
///
/// Sockets are registered once (`EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET`) and never modified:
/// a member remembers readiness edges itself and pauses reading by ignoring them
/// (see the server's `Connection.handleEvents`). Events carry the member's id, not its descriptor, so an event
/// harvested for a member that has closed since (its descriptor possibly reused) is dropped.
///
/// Lifetime: the thread holds the loop weakly; when the last reference goes, `deinit` wakes the
/// thread (an eventfd in the set), which closes the epoll set and ends.
/// Thread-safety: every mutable property is used only on `queue` (the rounds, the sweep timer, and
/// `register`/`deregister`/`scheduleRead` whose callers run on `queue`); the class is
/// `@unchecked Sendable` on that basis. Members assigned to this loop use `queue` as their own.
public final class EventLoop: @unchecked Sendable {
    /// The loop's serial queue: every member's I/O and callbacks run here.
    public let queue: DispatchQueue
    /// Position in its `EventLoopGroup` (0-based).
    public let index: Int
    private let epollDescriptor: Int32
    /// Written once by `deinit` to wake the thread so it ends (registered with id 0, never a member's).
    private let stopDescriptor: Int32
    private var sweepTimer: DispatchSourceTimer?
    private var members: [UInt64: any EventLoopMember] = [:]
    /// The thread's event buffer (read on `queue` during a round; freed by the thread when it ends).
    private let events: UnsafeMutablePointer<epoll_event>
    private static let batchSize = 256
    /// Members read in the current round, to be handled once all ready sockets are read.
    private var roundReads: [any EventLoopMember] = []
    /// Members whose writes wait for the end of the current round (``deferFlush(_:)``).
    private var deferredFlushes: [any EventLoopMember] = []
    /// Members whose reading resumed while input may be pending; read after the current round.
    private var pendingReads: [any EventLoopMember] = []
    private var inBatch = false
    /// When the current round of events was harvested (valid while `inBatch`).
    private var batchTime = DispatchTime.now()
    private var drainScheduled = false

    /// `sweepInterval`: how often deadlines are checked.
    public init(index: Int, sweepInterval: Duration) {
        self.index = index
        queue = DispatchQueue(label: "dcserve.loop.\(index)")
        epollDescriptor = epoll_create1(Int32(EPOLL_CLOEXEC))
        precondition(epollDescriptor >= 0, "epoll_create1 failed: errno \(errno)")
        stopDescriptor = eventfd(0, Int32(EFD_CLOEXEC) | Int32(EFD_NONBLOCK))
        precondition(stopDescriptor >= 0, "eventfd failed: errno \(errno)")
        var stop = epoll_event()
        stop.events = EPOLLIN.rawValue | EPOLLET.rawValue
        stop.data.u64 = 0
        precondition(epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, stopDescriptor, &stop) == 0, "epoll_ctl failed: errno \(errno)")
        events = .allocate(capacity: EventLoop.batchSize)
        let t = DispatchSource.makeTimerSource(queue: queue)
        let interval = DispatchTimeInterval.nanoseconds(sweepInterval.clampedNanoseconds)
        t.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(10))
        t.setEventHandler { [weak self] in self?.sweepDeadlines() }
        sweepTimer = t
        queue.setSpecific(key: EventLoop.currentKey, value: ObjectIdentifier(self))
        t.resume()
        EventLoopThread.start(self, name: "dcserve.loop.\(index)", epoll: epollDescriptor, stop: stopDescriptor, events: events,
                              capacity: EventLoop.batchSize)
    }

    deinit {
        // Members hold their loop strongly, so none is left here. The thread closes the descriptors
        // and frees the event buffer once it sees the loop gone.
        sweepTimer?.cancel()
        var one: UInt64 = 1
        _ = write(stopDescriptor, &one, 8)
    }

    /// One round, on `queue` (called by the loop's thread through `queue.sync`): serves the `count`
    /// events the thread harvested into `events`.
    fileprivate func runRound(_ count: Int) {
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
        inBatch = false
    }

    /// Marks each loop's queue with the loop's identity (see `isCurrent`).
    nonisolated(unsafe) private static let currentKey = DispatchSpecificKey<ObjectIdentifier>()

    /// True when the caller runs on this loop's `queue` (so work for the loop can be done inline
    /// instead of through `queue.async`, which would wait until the current batch ends).
    public var isCurrent: Bool { DispatchQueue.getSpecific(key: EventLoop.currentKey) == ObjectIdentifier(self) }

    /// The time for setting deadlines: during a batch, when its current round was harvested (at most
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

    /// Asks for `member.readPending()` after the current batch (or soon, outside a batch), for a
    /// member that resumed reading while input may be waiting: with edge triggering no new event
    /// would announce it. On `queue`.
    public func scheduleRead(_ member: any EventLoopMember) {
        pendingReads.append(member)
        if !inBatch && !drainScheduled {
            drainScheduled = true
            queue.async { self.drainScheduled = false; self.drainPendingReads() }
        }
    }

    /// Inside a batch: queues `member.flushDeferred()` for the end of the current round and returns
    /// true, so the writes of every request and response handled in the round leave together (the
    /// peers — upstream servers, clients — wake once for the round instead of once per write while
    /// this loop still works). Outside a batch: false, the caller writes now. A member asks once per
    /// round (it remembers that it asked). On `queue`.
    ///
    /// Members defer only small writes (at most ``deferredWriteLimit`` bytes pending): large bodies
    /// of a round sent back to back at its end overflow the peers' socket buffers (partial writes,
    /// waits for writability) — bench/proxy 100 KB went from 61 to 104 µs of CPU per request when
    /// they waited.
    public func deferFlush(_ member: any EventLoopMember) -> Bool {
        guard inBatch else { return false }
        deferredFlushes.append(member)
        return true
    }

    /// Largest pending output a member defers with ``deferFlush(_:)``; more is written at once.
    public static let deferredWriteLimit = 16 << 10

    /// Ends a round: the reads resumed during it, then the deferred writes, until neither is left (a
    /// write that completes a response may resume reading, and a read may answer and write again).
    /// Bounded: what is still pending after 16 passes continues on the queue, outside the batch.
    private func settleRound() {
        for _ in 0..<16 {
            drainPendingReads()
            runDeferredFlushes()
            if pendingReads.isEmpty || drainScheduled { return }
        }
        drainScheduled = true
        queue.async { self.drainScheduled = false; self.drainPendingReads() }
    }

    /// Runs the deferred writes (a write may complete a response and queue more: repeated until none).
    private func runDeferredFlushes() {
        while !deferredFlushes.isEmpty {
            let batch = deferredFlushes
            deferredFlushes = []
            for member in batch { member.flushDeferred() }
        }
    }

    private func drainPendingReads() {
        var rounds = 0
        while !pendingReads.isEmpty && rounds < 8 {
            let batch = pendingReads
            pendingReads = []
            for c in batch { c.readPending() }
            rounds += 1
        }
        if !pendingReads.isEmpty && !drainScheduled {
            drainScheduled = true
            queue.async { self.drainScheduled = false; self.drainPendingReads() }
        }
    }

    private func sweepDeadlines() {
        guard !members.isEmpty else { return }
        let now = DispatchTime.now()
        for member in Array(members.values) { member.checkDeadline(now) }
    }
}

/// A fixed set of event loops; new members are spread over them round-robin (`nextLoop`).
/// Thread-safety: immutable array plus an atomic counter.
public final class EventLoopGroup: Sendable {
    public let loops: [EventLoop]
    private let next = Atomic<Int>(0)

    public init(count: Int, sweepInterval: Duration) {
        loops = (0..<max(1, count)).map { EventLoop(index: $0, sweepInterval: sweepInterval) }
    }

    public func nextLoop() -> EventLoop {
        let i = next.add(1, ordering: .relaxed).oldValue
        return loops[i % loops.count]
    }
}


/// The thread of an ``EventLoop``: waits in `epoll_wait` on the loop's set and serves each round on
/// the loop's queue (`queue.sync`). Holds the loop weakly: once the loop is gone (its `deinit`
/// writes the stop eventfd), it closes both descriptors, frees the event buffer and ends.
private enum EventLoopThread {
    /// Weak box, so the thread never keeps its loop alive.
    private final class WeakLoop: @unchecked Sendable {
        weak var loop: EventLoop?
        init(_ loop: EventLoop) { self.loop = loop }
    }

    /// The descriptors and buffer the thread owns (plain values, sendable to the thread).
    private struct Owned: @unchecked Sendable {
        let epoll: Int32
        let stop: Int32
        let events: UnsafeMutablePointer<epoll_event>
        let capacity: Int32
    }

    static func start(_ loop: EventLoop, name: String, epoll: Int32, stop: Int32, events: UnsafeMutablePointer<epoll_event>,
                      capacity: Int) {
        let weak = WeakLoop(loop)
        let owned = Owned(epoll: epoll, stop: stop, events: events, capacity: Int32(capacity))
        Thread { run(weak, owned, name: name) }.start()
    }

    /// What one round serves: set by the thread before it enters the queue, cleared after.
    private final class Round: @unchecked Sendable {  // used by the loop's thread only
        var loop: EventLoop?
        var count = 0
    }

    private static func run(_ weak: WeakLoop, _ owned: Owned, name: String) {
        dcserve_set_thread_name(name)
        // One work item for every round: `queue.sync` with a closure boxes it (a heap allocation per
        // round); a work item's block is made once and may run any number of times (it is never waited on).
        let round = Round()
        let serve = DispatchWorkItem { round.loop?.runRound(round.count) }
        while true {
            let n = epoll_wait(owned.epoll, owned.events, owned.capacity, -1)
            if n < 0 && errno == EINTR { continue }
            precondition(n >= 0, "epoll_wait failed: errno \(errno)")
            guard let loop = weak.loop else { break }
            round.loop = loop
            round.count = Int(n)
            loop.queue.sync(execute: serve)
            round.loop = nil
        }
        close(owned.stop)
        close(owned.epoll)
        owned.events.deallocate()
    }
}
