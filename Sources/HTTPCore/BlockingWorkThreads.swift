#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Threads of their own for work that may block for a long time (the dictionary store: a disk read or
/// a PostgreSQL round trip bounded only by its timeout; large-body compression that waits for an
/// identical encode or for a large-encode slot; upstream name resolution), so that it never occupies
/// Dispatch's shared worker pool.
///
/// Why not `DispatchQueue.global()`: on Linux, libdispatch's pool for a QoS class adds about one thread
/// per second while its threads are blocked, and serves its queue in order, so N blocked items hold up
/// every later item of that class (other clients' large-body compression, dictionary loads, name
/// lookups) for up to N seconds.
///
/// Two caps:
/// - `maxThreads`: at most this many threads exist; further work waits in FIFO order without holding a
///   thread, and starts as soon as one is free.
/// - `maxRunning` (default `maxThreads`): at most this many items run at once *outside*
///   `BlockingWorkThreads.whileBlocked { … }` sections. An item that waits inside such a section (for
///   another thread's result, for a slot) does not count while it waits: the next item in line starts
///   on another thread (up to `maxThreads`), so CPU-bound work stays bounded by `maxRunning` while
///   waiting work never holds up the rest. A thread leaving the section carries on at once (so running
///   items may briefly exceed `maxRunning`; no new item starts until they are fewer again).
/// The waits inside `whileBlocked` must be for work that already holds a thread (never for an item
/// still queued here), or they could wait for ever once `maxThreads` threads wait.
///
/// Work that arrives wakes an idle thread not yet woken for earlier work, else starts one (within both
/// caps); a thread ends after `idleSeconds` without work, so an idle server (or a test that makes many
/// instances) keeps none. Thread-safe. An instance lives at least as long as its threads (each holds
/// it).
public final class BlockingWorkThreads: @unchecked Sendable {
    public let maxThreads: Int
    public let maxRunning: Int
    private let name: String
    private let idleSeconds: Double
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var pending: [@Sendable () -> Void] = []
    private var head = 0
    private var threads = 0
    /// Threads waiting for work, and how many of them were signalled for work already queued (so a
    /// burst of work wakes as many idle threads, or starts new ones, instead of queueing behind one).
    private var idle = 0
    private var claimed = 0
    /// Threads started and not yet looking for work.
    private var starting = 0
    /// Items running outside `whileBlocked`, and threads inside it.
    private var running = 0
    private var blocked = 0

    public init(name: String, maxThreads: Int, maxRunning: Int? = nil, idleSeconds: Double = 10) {
        self.name = name
        self.maxThreads = max(1, maxThreads)
        self.maxRunning = min(self.maxThreads, max(1, maxRunning ?? maxThreads))
        self.idleSeconds = idleSeconds
    }

    /// Runs `work` on one of the threads, now or once one is free (in the order work came).
    public func async(_ work: @escaping @Sendable () -> Void) {
        condition.lock()
        pending.append(work)
        let start = wakeOrReserveThread()
        condition.unlock()
        if start { startThread() }
    }

    /// Runs `body` on the calling thread; when that is one of a `BlockingWorkThreads`' threads, its item
    /// does not count against that instance's `maxRunning` meanwhile (see the type's comment: wait here
    /// only for work that already holds a thread). Anywhere else (an event loop, Dispatch) it only runs
    /// `body`. Nested calls count once.
    public static func whileBlocked<T>(_ body: () throws -> T) rethrows -> T {
        guard let raw = pthread_getspecific(currentKey) else { return try body() }
        let threads = Unmanaged<BlockingWorkThreads>.fromOpaque(raw).takeUnretainedValue()
        pthread_setspecific(currentKey, nil)  // nested calls: no second count
        threads.enterBlocked()
        defer {
            threads.leaveBlocked()
            pthread_setspecific(currentKey, raw)
        }
        return try body()
    }

    /// Threads running now (started and not yet ended), and how many of them wait for work; for tests.
    var threadCount: Int { counts.threads }
    var counts: (threads: Int, idle: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (threads, idle)
    }
    /// Threads inside `whileBlocked` now; for tests.
    var blockedCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return blocked
    }

    /// The instance whose thread is the current one (unretained: its thread's closure holds it).
    private static let currentKey: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "pthread_key_create failed")
        return key
    }()

    /// Under the lock: when queued work could start now (within `maxRunning`) and no thread is on its
    /// way to take it, signals an idle thread not yet signalled, or counts a new thread (returns true:
    /// the caller starts it after unlocking), within `maxThreads`.
    private func wakeOrReserveThread() -> Bool {
        let onTheWay = claimed + starting
        guard pending.count - head > onTheWay, running + onTheWay < maxRunning else { return false }
        if idle > claimed {
            claimed += 1
            condition.signal()
            return false
        }
        guard threads < maxThreads else { return false }
        threads += 1
        starting += 1
        return true
    }

    private func startThread() {
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    private func enterBlocked() {
        condition.lock()
        running -= 1
        blocked += 1
        let start = wakeOrReserveThread()
        condition.unlock()
        if start { startThread() }
    }

    private func leaveBlocked() {
        condition.lock()
        running += 1
        blocked -= 1
        condition.unlock()
    }

    private func run() {
        pthread_setspecific(Self.currentKey, Unmanaged.passUnretained(self).toOpaque())
        condition.lock()
        starting -= 1
        while true {
            if head < pending.count && running < maxRunning {
                let work = pending[head]
                head += 1
                if head == pending.count {
                    pending.removeAll(keepingCapacity: true)
                    head = 0
                } else if head >= 1024 && head * 2 >= pending.count {
                    pending.removeFirst(head)
                    head = 0
                }
                running += 1
                let start = wakeOrReserveThread()  // more work and room: another thread takes it meanwhile
                condition.unlock()
                if start { startThread() }
                work()
                condition.lock()
                running -= 1
                continue
            }
            idle += 1
            let woken = condition.wait(until: Date(timeIntervalSinceNow: idleSeconds))
            idle -= 1
            if claimed > 0 { claimed -= 1 }  // whichever thread wakes takes the claim (and the work)
            // Timed out with nothing this thread could take: end (running items take later work).
            if !woken && !(head < pending.count && running < maxRunning) {
                threads -= 1
                condition.unlock()
                pthread_setspecific(Self.currentKey, nil)
                return
            }
        }
    }
}
