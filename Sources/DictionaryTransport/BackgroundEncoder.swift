import Dispatch
import Locking

/// A small work queue for best-level re-encodes that must not delay responses.
///
/// Jobs are closures keyed by `Key` (e.g. a ``VariantKey``): a job whose key is already queued or
/// running is dropped (de-duplication), and at most `maxPending` jobs wait (more are dropped and
/// counted). At most `maxConcurrent` jobs run at once (default 1) on Dispatch's global utility queue.
/// Knows nothing about codecs. Thread-safe (state behind one `Locked` lock).
public final class BackgroundEncoder<Key: Hashable & Sendable>: Sendable {
    public typealias Job = @Sendable () -> Void

    public let maxConcurrent: Int
    public let maxPending: Int
    private let state: Locked<State>

    private struct State {
        var queue: [(Key, Job)] = []
        var queueHead = 0
        var keys = Set<Key>()
        var running = 0
        var completed = 0
        var dropped = 0
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        /// Set by `close()`: no new jobs. `waitForRunningJobs()` callers wait on these until idle.
        var closed = false
        var closeWaiters: [DispatchSemaphore] = []
        var pending: Int { queue.count - queueHead }
    }

    public init(maxConcurrent: Int = 1, maxPending: Int = 1024) {
        precondition(maxConcurrent >= 1 && maxPending >= 1)
        self.maxConcurrent = maxConcurrent
        self.maxPending = maxPending
        state = Locked(State())
    }

    /// Queues `job` under `key`. Returns false when a job with that key is already queued or running,
    /// or the queue is full.
    @discardableResult
    public func submit(_ key: Key, _ job: @escaping Job) -> Bool {
        let (accepted, startWorker): (Bool, Bool) = state.withLock { s in
            guard !s.closed, !s.keys.contains(key), s.pending < maxPending else { s.dropped += 1; return (false, false) }
            s.keys.insert(key)
            s.queue.append((key, job))
            guard s.running < maxConcurrent else { return (true, false) }
            s.running += 1
            return (true, true)
        }
        if startWorker { DispatchQueue.global(qos: .utility).async { self.work() } }
        return accepted
    }

    private func work() {
        while true {
            let next: (Key, Job)? = state.withLock { s in
                guard s.queueHead < s.queue.count else {
                    s.running -= 1
                    s.queue.removeAll(keepingCapacity: true)
                    s.queueHead = 0
                    if s.running == 0 {
                        for waiter in s.idleWaiters { waiter.resume() }
                        s.idleWaiters.removeAll()
                        for waiter in s.closeWaiters { waiter.signal() }
                        s.closeWaiters.removeAll()
                    }
                    return nil
                }
                let item = s.queue[s.queueHead]
                s.queueHead += 1
                return item
            }
            guard let (key, job) = next else { return }
            job()
            state.withLock { s in
                s.keys.remove(key)
                s.completed += 1
            }
        }
    }

    /// Jobs waiting (not yet started).
    public var pendingCount: Int { state.withLock { $0.pending } }
    /// Jobs finished since creation.
    public var completedCount: Int { state.withLock { $0.completed } }
    /// Jobs refused as duplicates or because the queue was full.
    public var droppedCount: Int { state.withLock { $0.dropped } }

    /// Stops the encoder for good (shutdown, before the process exits): later `submit`s are refused
    /// and queued jobs are dropped (counted in `droppedCount`). Jobs already running go on; wait for
    /// them with `waitForRunningJobs()`.
    public func close() {
        state.withLock { s in
            s.closed = true
            s.dropped += s.pending
            for (key, _) in s.queue[s.queueHead...] { s.keys.remove(key) }
            s.queueHead = s.queue.count
        }
    }

    /// Blocks the calling thread until no job runs (after `close()`, until the encoder is quiet for
    /// good). Never call it from a job.
    public func waitForRunningJobs() {
        let wait: DispatchSemaphore? = state.withLock { s in
            guard s.running > 0 else { return nil }
            let semaphore = DispatchSemaphore(value: 0)
            s.closeWaiters.append(semaphore)
            return semaphore
        }
        wait?.wait()
    }

    /// Returns once no job is queued or running (for tests and graceful shutdown).
    public func waitUntilIdle() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { s in
                if s.running == 0 && s.pending == 0 { return true }
                s.idleWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }
}
