@testable import HTTPCore
import Dispatch
import Foundation
import Synchronization
import Testing
import Locking

/// `BlockingWorkThreads`: blocked work holds at most `maxThreads` threads, later work waits its turn
/// (in order) without a thread and runs as soon as one is free, work elsewhere in Dispatch's pool is not
/// held up by it, and idle threads end; at most `maxRunning` items run at once, not counting items
/// waiting inside `whileBlocked`.
@Suite struct BlockingWorkThreadsTests {
    /// Polls `condition` every 5 ms for at most `seconds` (bounded).
    static func eventually(_ seconds: Double = 10, _ condition: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while !condition() {
            if Date() > deadline { return false }
            usleep(5_000)
        }
        return true
    }

    final class Progress: Sendable {
        let running = Atomic<Int>(0), peak = Atomic<Int>(0)
        let order = Locked<[Int]>([])
    }

    @Test func blockedWorkHoldsAtMostItsThreadsAndTheRestRunsWhenOneIsFree() {
        let threads = BlockingWorkThreads(name: "test.blocking", maxThreads: 3, idleSeconds: 0.2)
        let gate = DispatchSemaphore(value: 0)
        let progress = Progress()
        for i in 0..<10 {
            threads.async {
                let now = progress.running.add(1, ordering: .sequentiallyConsistent).newValue
                progress.peak.max(now, ordering: .sequentiallyConsistent)
                if i < 3 { gate.wait() }  // the first three block, as store reads waiting on a lock do
                progress.order.withLock { $0.append(i) }
                progress.running.subtract(1, ordering: .sequentiallyConsistent)
            }
        }
        #expect(Self.eventually { progress.running.load(ordering: .sequentiallyConsistent) == 3 })
        usleep(50_000)
        // Three threads, all blocked: nothing else ran, and no fourth thread was started.
        #expect(progress.order.withLock { $0.isEmpty })
        #expect(threads.threadCount == 3)
        // Dispatch's pool is not held: work there runs at once.
        let other = DispatchSemaphore(value: 0)
        DispatchQueue.global(qos: .userInitiated).async { other.signal() }
        #expect(other.wait(timeout: .now() + 5) == .success)
        for _ in 0..<3 { gate.signal() }
        #expect(Self.eventually { progress.order.withLock { $0.count } == 10 })
        #expect(progress.peak.load(ordering: .sequentiallyConsistent) == 3)
        #expect(progress.order.withLock { $0.sorted() } == Array(0..<10))
        // Idle threads end.
        #expect(Self.eventually { threads.threadCount == 0 })
        // And start again for new work.
        let again = DispatchSemaphore(value: 0)
        threads.async { again.signal() }
        #expect(again.wait(timeout: .now() + 5) == .success)
    }

    @Test func waitingWorkRunsInTheOrderItCame() {
        let threads = BlockingWorkThreads(name: "test.blocking", maxThreads: 1, idleSeconds: 0.2)
        let gate = DispatchSemaphore(value: 0)
        let progress = Progress()
        for i in 0..<10 {
            threads.async {
                if i == 0 { gate.wait() }
                progress.order.withLock { $0.append(i) }
            }
        }
        usleep(50_000)
        #expect(progress.order.withLock { $0.isEmpty } && threads.threadCount == 1)
        gate.signal()
        #expect(Self.eventually { progress.order.withLock { $0.count } == 10 })
        #expect(progress.order.withLock { $0 } == Array(0..<10))
    }

    @Test func aBurstWakesOrStartsAThreadPerItemNotOneForAll() {
        let threads = BlockingWorkThreads(name: "test.blocking", maxThreads: 3, idleSeconds: 5)
        let warm = DispatchSemaphore(value: 0)
        threads.async { warm.signal() }
        #expect(warm.wait(timeout: .now() + 5) == .success)
        #expect(Self.eventually { threads.counts == (1, 1) })  // one thread, idle
        let gate = DispatchSemaphore(value: 0)
        let progress = Progress()
        for _ in 0..<3 {
            threads.async {
                progress.running.add(1, ordering: .sequentiallyConsistent)
                gate.wait()
                progress.running.subtract(1, ordering: .sequentiallyConsistent)
            }
        }
        // All three block at once: the idle thread takes one, two more start (none waits behind a blocked one).
        #expect(Self.eventually { progress.running.load(ordering: .sequentiallyConsistent) == 3 })
        #expect(threads.threadCount == 3)
        for _ in 0..<3 { gate.signal() }
        #expect(Self.eventually { progress.running.load(ordering: .sequentiallyConsistent) == 0 })
    }

    @Test func aThreadIsStartedOnlyWhenNoneIsIdle() {
        let threads = BlockingWorkThreads(name: "test.blocking", maxThreads: 4, idleSeconds: 5)
        for _ in 0..<5 {
            let done = DispatchSemaphore(value: 0)
            threads.async { done.signal() }
            #expect(done.wait(timeout: .now() + 5) == .success)
            #expect(Self.eventually { threads.counts.idle == 1 })  // the thread waits for work again
        }
        #expect(threads.threadCount == 1)
    }

    @Test func atMostMaxRunningItemsRunAndTheRestWaitInOrderWithoutAThread() {
        let threads = BlockingWorkThreads(name: "test.blocking", maxThreads: 8, maxRunning: 2, idleSeconds: 0.2)
        let gate = DispatchSemaphore(value: 0)
        let progress = Progress()
        for i in 0..<6 {
            threads.async {
                let now = progress.running.add(1, ordering: .sequentiallyConsistent).newValue
                progress.peak.max(now, ordering: .sequentiallyConsistent)
                gate.wait()  // CPU-bound work would hold its slot the same way
                progress.order.withLock { $0.append(i) }
                progress.running.subtract(1, ordering: .sequentiallyConsistent)
            }
        }
        #expect(Self.eventually { progress.running.load(ordering: .sequentiallyConsistent) == 2 })
        usleep(50_000)
        #expect(progress.running.load(ordering: .sequentiallyConsistent) == 2 && threads.threadCount == 2)
        for _ in 0..<6 { gate.signal() }
        #expect(Self.eventually { progress.order.withLock { $0.count } == 6 })
        #expect(progress.peak.load(ordering: .sequentiallyConsistent) == 2)
    }

    /// Items waiting inside `whileBlocked` (for a result another thread computes) do not count against
    /// `maxRunning`: the next items start meanwhile, on threads of their own, up to `maxThreads`.
    @Test func itemsWaitingInWhileBlockedLetTheNextOnesRun() {
        let threads = BlockingWorkThreads(name: "test.blocking", maxThreads: 8, maxRunning: 1, idleSeconds: 0.2)
        let gate = DispatchGroup()
        gate.enter()
        let progress = Progress()
        for i in 0..<5 {
            threads.async {
                BlockingWorkThreads.whileBlocked {
                    BlockingWorkThreads.whileBlocked { _ = gate.wait(timeout: .now() + 30) }  // nested: counted once
                }
                progress.order.withLock { $0.append(i) }
            }
        }
        #expect(Self.eventually { threads.blockedCount == 5 })
        #expect(threads.threadCount == 5)
        // A sixth item runs at once although maxRunning is 1.
        let ran = DispatchSemaphore(value: 0)
        threads.async { ran.signal() }
        #expect(ran.wait(timeout: .now() + 10) == .success)
        gate.leave()
        #expect(Self.eventually { progress.order.withLock { $0.count } == 5 })
        #expect(Self.eventually { threads.counts == (0, 0) })
        // Beyond maxThreads, further work waits for a thread: 8 blocked, the ninth item waits.
        let gate2 = DispatchGroup()
        gate2.enter()
        for _ in 0..<8 { threads.async { BlockingWorkThreads.whileBlocked { _ = gate2.wait(timeout: .now() + 30) } } }
        #expect(Self.eventually { threads.blockedCount == 8 })
        let ninth = DispatchSemaphore(value: 0)
        threads.async { ninth.signal() }
        #expect(ninth.wait(timeout: .now() + 0.2) == .timedOut)
        gate2.leave()
        #expect(ninth.wait(timeout: .now() + 10) == .success)
    }

    @Test func whileBlockedElsewhereOnlyRunsItsBody() {
        #expect(BlockingWorkThreads.whileBlocked { 42 } == 42)
        let threads = BlockingWorkThreads(name: "test.blocking", maxThreads: 2)
        DispatchQueue.global().sync { _ = BlockingWorkThreads.whileBlocked { 1 } }
        #expect(threads.blockedCount == 0)
    }
}
