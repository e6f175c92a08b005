#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Dispatch
import Synchronization

/// One serial Dispatch queue that drives the I/O of many connections.
///
/// Design: the loop owns an edge-triggered epoll set holding its connections' sockets. A single
/// `DispatchSourceRead` watches the epoll descriptor itself (an epoll descriptor is readable while it
/// has events), with this loop's serial `queue` as its target. Its handler harvests a batch of events
/// with a non-blocking `epoll_wait` and serves them inline: first one read from every ready socket
/// (`Connection.prefetch`), then the handling of what was read (`finishPrefetch`), so requests read in
/// one round share one file-freshness check (see `InputSequence`). So libdispatch's
/// per-event machinery (wake-up, hand-off, re-arm) is paid once per batch instead of once per socket
/// event, and under load one wake-up serves many requests: the handler keeps harvesting while events
/// keep coming, and when none is ready it waits up to `ServerConfiguration.eventLoopLinger` in
/// `epoll_pwait2` for the next one (bounded: 64 rounds or 1 ms per invocation, then the queue's other
/// work runs). Deadlines are checked by one timer source
/// per loop that sweeps its connections (timeouts are seconds; the sweep tick is a fraction of the
/// shortest configured timeout), instead of one timer source per connection.
///
/// Sockets are registered once (`EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET`) and never modified:
/// a connection remembers readiness edges itself and pauses reading by ignoring them
/// (see `Connection.handleEvents`). Events carry the connection's id, not its descriptor, so an event
/// harvested for a connection that has closed since (its descriptor possibly reused) is dropped.
///
/// Thread-safety: every mutable property is used only on `queue` (the Dispatch source handlers, and
/// `register`/`deregister`/`scheduleRead` whose callers run on `queue`); the class is
/// `@unchecked Sendable` on that basis. Connections assigned to this loop use `queue` as their own.
final class EventLoop: @unchecked Sendable {
    let queue: DispatchQueue
    private let epollDescriptor: Int32
    private var source: DispatchSourceRead?
    private var sweepTimer: DispatchSourceTimer?
    private var members: [UInt64: Connection] = [:]
    private let events: UnsafeMutablePointer<epoll_event>
    private let batchSize = 256
    /// Bounds on one run of `runBatches`, so other work on `queue` waits at most about this long.
    private let maxRounds = 64
    private let maxBatchNanoseconds: UInt64 = 1_000_000
    /// How long a batch waits for more events once none is ready (`ServerConfiguration.eventLoopLinger`).
    private let lingerNanoseconds: Int
    /// Connections read in the current round, to be handled once all ready sockets are read.
    private var roundReads: [Connection] = []
    /// Connections whose reading resumed while input may be pending; read after the current batch.
    private var pendingReads: [Connection] = []
    private var inBatch = false
    /// When the current round of events was harvested (valid while `inBatch`).
    private var batchTime = DispatchTime.now()
    private var drainScheduled = false

    /// `sweepInterval`: how often deadlines are checked.
    init(index: Int, sweepInterval: Duration, linger: Duration) {
        lingerNanoseconds = Int(linger.nanoseconds)
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
        let interval = DispatchTimeInterval.nanoseconds(Int(sweepInterval.nanoseconds))
        t.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(10))
        t.setEventHandler { [weak self] in self?.sweepDeadlines() }
        sweepTimer = t
        s.resume()
        t.resume()
    }

    deinit {
        // Connections hold their loop strongly, so none is left here. The cancel handler closes the
        // epoll descriptor once the source can no longer use it.
        source?.cancel()
        sweepTimer?.cancel()
        events.deallocate()
    }

    /// The time for setting deadlines: during a batch, when its current round was harvested (at most
    /// about a millisecond old, and deadlines are seconds), which saves a clock read per request;
    /// otherwise the clock. On `queue`.
    var now: DispatchTime { inBatch ? batchTime : DispatchTime.now() }

    /// Adds `connection`'s socket to the epoll set. On `queue`. False if the kernel refused it.
    func register(_ connection: Connection, descriptor: Int32) -> Bool {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | EPOLLOUT.rawValue | EPOLLRDHUP.rawValue | EPOLLET.rawValue
        event.data.u64 = connection.id
        guard epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, descriptor, &event) == 0 else { return false }
        members[connection.id] = connection
        return true
    }

    /// Removes a connection before its descriptor is closed. On `queue`.
    func deregister(_ connection: Connection, descriptor: Int32) {
        if members.removeValue(forKey: connection.id) != nil {
            var event = epoll_event()
            _ = epoll_ctl(epollDescriptor, EPOLL_CTL_DEL, descriptor, &event)
        }
    }

    /// Asks for `connection.readPending()` after the current batch (or soon, outside a batch), for a
    /// connection that resumed reading while input may be waiting: with edge triggering no new event
    /// would announce it. On `queue`.
    func scheduleRead(_ connection: Connection) {
        pendingReads.append(connection)
        if !inBatch && !drainScheduled {
            drainScheduled = true
            queue.async { self.drainScheduled = false; self.drainPendingReads() }
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
                guard let connection = members[e.data.u64] else { continue }
                if connection.prefetch(e.events) { roundReads.append(connection) }
            }
            for connection in roundReads { connection.finishPrefetch() }
            roundReads.removeAll(keepingCapacity: true)
            drainPendingReads()
            if batchTime.uptimeNanoseconds - start.uptimeNanoseconds > maxBatchNanoseconds { break }
        }
        drainPendingReads()
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
        for connection in Array(members.values) { connection.checkDeadline(now) }
    }
}

/// The server's event loops; new connections are spread over them round-robin.
/// Thread-safety: immutable array plus an atomic counter.
final class EventLoopGroup: Sendable {
    let loops: [EventLoop]
    private let next = Atomic<Int>(0)

    init(count: Int, sweepInterval: Duration, linger: Duration) {
        loops = (0..<max(1, count)).map { EventLoop(index: $0, sweepInterval: sweepInterval, linger: linger) }
    }

    func nextLoop() -> EventLoop {
        let i = next.add(1, ordering: .relaxed).oldValue
        return loops[i % loops.count]
    }
}

