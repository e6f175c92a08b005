import Foundation

/// Threads of their own for work that may block for a long time on something outside the process
/// (the dictionary store: a disk read, or a PostgreSQL round trip bounded only by its timeout), so that
/// it never occupies Dispatch's shared worker pool.
///
/// Why not `DispatchQueue.global()`: on Linux, libdispatch's pool for a QoS class adds about one thread
/// per second while its threads are blocked, and serves its queue in order, so N blocked store reads
/// hold up every later item of that class (the middleware's large-body compression, other clients'
/// dictionary loads) for up to N seconds.
///
/// At most `maxThreads` run at once; further work waits in FIFO order without holding a thread. Work
/// that arrives wakes an idle thread not yet woken for earlier work, else starts one (up to the cap); a
/// thread ends after `idleSeconds` without work, so an idle server (or a test that makes many
/// instances) keeps none. Thread-safe.
final class BlockingWorkThreads: @unchecked Sendable {
    let maxThreads: Int
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

    init(name: String, maxThreads: Int, idleSeconds: Double = 10) {
        self.name = name
        self.maxThreads = max(1, maxThreads)
        self.idleSeconds = idleSeconds
    }

    /// Runs `work` on one of the threads, now or once one is free.
    func async(_ work: @escaping @Sendable () -> Void) {
        condition.lock()
        pending.append(work)
        var start = false
        if idle > claimed {
            claimed += 1
            condition.signal()
        } else if threads < maxThreads {
            threads += 1
            start = true
        }
        condition.unlock()
        if start {
            let thread = Thread { [self] in run() }
            thread.name = name
            thread.start()
        }
    }

    /// Threads running now (started and not yet ended), and how many of them wait for work; for tests.
    var threadCount: Int { counts.threads }
    var counts: (threads: Int, idle: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (threads, idle)
    }

    private func run() {
        condition.lock()
        while true {
            if head == pending.count {
                idle += 1
                let woken = condition.wait(until: Date(timeIntervalSinceNow: idleSeconds))
                idle -= 1
                if claimed > 0 { claimed -= 1 }  // whichever thread wakes takes the claim (and the work)
                if !woken && head == pending.count {
                    threads -= 1
                    condition.unlock()
                    return
                }
                continue
            }
            let work = pending[head]
            head += 1
            if head == pending.count {
                pending.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 1024 && head * 2 >= pending.count {
                pending.removeFirst(head)
                head = 0
            }
            condition.unlock()
            work()
            condition.lock()
        }
    }
}
