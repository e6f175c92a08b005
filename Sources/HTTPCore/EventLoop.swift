#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Dispatch
import Synchronization

/// One serial Dispatch queue that drives the I/O of many sockets (its `EventLoopMember`s: server
/// connections, upstream client connections, ...).
///
/// Design: the loop owns an edge-triggered epoll set holding its members' sockets. A single
/// `DispatchSourceRead` watches the epoll descriptor itself (an epoll descriptor is readable while it
/// has events), with this loop's serial `queue` as its target. Its handler harvests a batch of events
/// with a non-blocking `epoll_wait` and serves them inline: first one read from every ready socket
/// (`EventLoopMember.prefetch`), then the handling of what was read (`finishPrefetch`), so requests read in
/// one round share one file-freshness check (see `InputSequence`). So libdispatch's
/// per-event machinery (wake-up, hand-off, re-arm) is paid once per batch instead of once per socket
/// event, and under load one wake-up serves many requests: the handler keeps harvesting while events
/// keep coming, and when none is ready it waits up to `linger` in
/// `epoll_pwait2` for the next one (bounded: 64 rounds or 1 ms per invocation, then the queue's other
/// work runs). Deadlines are checked by one timer source
/// per loop that sweeps its members (timeouts are seconds; the sweep tick is a fraction of the
/// shortest configured timeout), instead of one timer source per member.
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
/// Thread-safety: every mutable property is used only on `queue` (the Dispatch source handlers, and
/// `register`/`deregister`/`scheduleRead` whose callers run on `queue`); the class is
/// `@unchecked Sendable` on that basis. Members assigned to this loop use `queue` as their own.
public final class EventLoop: @unchecked Sendable {
    /// The loop's serial queue: every member's I/O and callbacks run here.
    public let queue: DispatchQueue
    /// Position in its `EventLoopGroup` (0-based).
    public let index: Int
    private let epollDescriptor: Int32
    private var source: DispatchSourceRead?
    private var sweepTimer: DispatchSourceTimer?
    private var members: [UInt64: any EventLoopMember] = [:]
    private let events: UnsafeMutablePointer<epoll_event>
    private let batchSize = 256
    /// Bounds on one run of `runBatches`, so other work on `queue` waits at most about this long.
    private let maxRounds = 64
    private let maxBatchNanoseconds: UInt64 = 1_000_000
    /// How long a batch waits for more events once none is ready (`linger`).
    private let lingerNanoseconds: Int
    /// Members read in the current round, to be handled once all ready sockets are read.
    private var roundReads: [any EventLoopMember] = []
    /// Members whose writes wait for the end of the current round (``deferFlush(_:)``).
    private var deferredFlushes: [any EventLoopMember] = []
    /// Members whose reading resumed while input may be pending; read after the current batch.
    private var pendingReads: [any EventLoopMember] = []
    private var inBatch = false
    /// When the current round of events was harvested (valid while `inBatch`).
    private var batchTime = DispatchTime.now()
    private var drainScheduled = false

    /// `sweepInterval`: how often deadlines are checked. `linger`: how long a batch waits for more
    /// events once none is ready (0 = never wait).
    public init(index: Int, sweepInterval: Duration, linger: Duration) {
        self.index = index
        lingerNanoseconds = linger.clampedNanoseconds
        queue = DispatchQueue(label: "dcserve.loop.\(index)")
        epollDescriptor = epoll_create1(Int32(EPOLL_CLOEXEC))
        precondition(epollDescriptor >= 0, "epoll_create1 failed: errno \(errno)")
        events = .allocate(capacity: batchSize)
        let s = DispatchSource.makeReadSource(fileDescriptor: epollDescriptor, queue: queue)
        s.setEventHandler { [weak self] in self?.runBatches() }
        let fd = epollDescriptor
        s.setCancelHandler { _ = close(fd) }
        source = s
        let t = DispatchSource.makeTimerSource(queue: queue)
        let interval = DispatchTimeInterval.nanoseconds(sweepInterval.clampedNanoseconds)
        t.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(10))
        t.setEventHandler { [weak self] in self?.sweepDeadlines() }
        sweepTimer = t
        queue.setSpecific(key: EventLoop.currentKey, value: ObjectIdentifier(self))
        s.resume()
        t.resume()
    }

    deinit {
        // Members hold their loop strongly, so none is left here. The cancel handler closes the
        // epoll descriptor once the source can no longer use it.
        source?.cancel()
        sweepTimer?.cancel()
        events.deallocate()
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

    private func runBatches() {
        inBatch = true
        // Rounds while the set keeps producing events (under load, replies to the last batch's
        // responses are already waiting), bounded in count and time; then yield to the queue (the
        // level-triggered source fires again if events remain).
        let start = DispatchTime.now()
        batchTime = start
        for round in 0..<maxRounds {
            var n = epoll_wait(epollDescriptor, events, Int32(batchSize), 0)
            if n == 0 && lingerNanoseconds > 0 && !drainScheduled {
                // Nothing ready (and no read queued behind this batch): wait briefly here for the next
                // arrival instead of handing the descriptor back to libdispatch, whose wake-up path
                // costs two thread switches.
                n = dcserve_epoll_wait_nanoseconds(epollDescriptor, events, Int32(batchSize), lingerNanoseconds)
            }
            if n <= 0 { break }
            if round > 0 { batchTime = DispatchTime.now() }
            // Read every ready socket first, then handle what was read: requests read in one round
            // then share one freshness check (FileSnapshotCache, InputSequence).
            for i in 0..<Int(n) {
                let e = events[i]
                guard let member = members[e.data.u64] else { continue }
                if member.prefetch(e.events) { roundReads.append(member) }
            }
            for member in roundReads { member.finishPrefetch() }
            roundReads.removeAll(keepingCapacity: true)
            settleRound()
            if batchTime.uptimeNanoseconds - start.uptimeNanoseconds > maxBatchNanoseconds { break }
        }
        settleRound()
        inBatch = false
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

    public init(count: Int, sweepInterval: Duration, linger: Duration) {
        loops = (0..<max(1, count)).map { EventLoop(index: $0, sweepInterval: sweepInterval, linger: linger) }
    }

    public func nextLoop() -> EventLoop {
        let i = next.add(1, ordering: .relaxed).oldValue
        return loops[i % loops.count]
    }
}

