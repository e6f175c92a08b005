#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Dispatch
import Foundation
import Locking
import Testing
@testable import HTTPCore

/// The named thread's id and its scheduler state (`/proc/self/task/*/stat`: "S" while it sleeps).
private func threadState(named name: String) -> (tid: String, state: Character)? {
    guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") else { return nil }
    for tid in tasks {
        guard let comm = try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8),
              comm.trimmingCharacters(in: .whitespacesAndNewlines) == name,
              let stat = try? String(contentsOfFile: "/proc/self/task/\(tid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { continue }
        let rest = stat[stat.index(after: close)...].drop { $0 == " " }
        guard let state = rest.first else { continue }
        return (tid, state)
    }
    return nil
}

/// Waits (bounded) until the named thread sleeps; true if it was seen asleep.
private func waitUntilAsleep(_ name: String) -> Bool {
    for _ in 0..<1000 {
        if threadState(named: name)?.state == "S" { return true }
        usleep(2_000)
    }
    return false
}

/// A member that, on input, notes the round's time (`loop.now`, fixed for a round) and queues a task
/// that notes it again, plus a task that task queues.
private final class QueueingMember: EventLoopMember, @unchecked Sendable {
    let id = EventLoopMemberID.next()
    let descriptor: Int32
    let loop: EventLoop
    /// (what, round time in ns, on the loop's queue)
    let log = Locked<[(String, UInt64, Bool)]>([])
    let done = DispatchSemaphore(value: 0)

    init(descriptor: Int32, loop: EventLoop) { (self.descriptor, self.loop) = (descriptor, loop) }

    func handleEvents(_ mask: UInt32) {
        guard drainedInput(descriptor, mask) else { return }
        let loop = loop
        note("event")
        loop.execute { [self] in
            note("task")
            loop.execute { [self] in
                note("nested task")
                done.signal()
            }
        }
        note("event end")
    }

    private func note(_ what: String) {
        let entry = (what, loop.now.uptimeNanoseconds, loop.isCurrent)
        log.withLock { $0.append(entry) }
    }

    func checkDeadline(_ now: DispatchTime) {}
}

@Suite("EventLoop.execute: work run by the loop's own thread")
struct EventLoopExecuteTests {
    /// Tasks queued from one thread run in the order queued, all on the loop's thread inside its queue.
    @Test func tasksFromOneThreadRunInOrderOnTheLoopsThread() {
        let loop = EventLoop(index: 40, sweepInterval: .seconds(1))
        let ran = Locked<[Int]>([])
        let placesOK = Locked(true)
        let finished = DispatchSemaphore(value: 0)
        let count = 2000
        for i in 0..<count {
            loop.execute {
                let right = loop.isCurrent && currentThreadName() == "dcserve.loop.40"
                if !right { placesOK.withLock { $0 = false } }
                ran.withLock { $0.append(i) }
                if i == count - 1 { finished.signal() }
            }
        }
        #expect(finished.wait(timeout: .now() + 30) == .success)
        #expect(ran.withLock { $0 } == Array(0..<count))
        #expect(placesOK.withLock { $0 })
    }

    /// Several threads queue at once: every task runs once, and each thread's tasks keep their order.
    @Test func tasksFromSeveralThreadsEachKeepTheirOrder() {
        let loop = EventLoop(index: 41, sweepInterval: .seconds(1))
        let ran = Locked<[(thread: Int, i: Int)]>([])
        let all = DispatchGroup()
        let perThread = 500, threads = 4
        for _ in 0..<(perThread * threads) { all.enter() }
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            for i in 0..<perThread {
                loop.execute {
                    ran.withLock { $0.append((t, i)) }
                    all.leave()
                }
            }
        }
        #expect(all.wait(timeout: .now() + 30) == .success)
        let entries = ran.withLock { $0 }
        #expect(entries.count == perThread * threads)
        for t in 0..<threads {
            #expect(entries.filter { $0.thread == t }.map(\.i) == Array(0..<perThread))
        }
    }

    /// A task queued from another thread while the loop's thread sleeps in `epoll_wait` (no socket
    /// event, no timer will come) wakes it and runs; again and again, so the wake-up is re-armed
    /// each time the thread goes back to sleep.
    @Test func aTaskQueuedWhileTheLoopSleepsWakesItAndRuns() {
        let loop = EventLoop(index: 42, sweepInterval: .seconds(3600))
        for attempt in 0..<20 {
            #expect(waitUntilAsleep("dcserve.loop.42"), "attempt \(attempt): the loop's thread never slept")
            let ran = DispatchSemaphore(value: 0)
            let onLoop = Locked(false)
            loop.execute {
                onLoop.withLock { $0 = loop.isCurrent && currentThreadName() == "dcserve.loop.42" }
                ran.signal()
            }
            #expect(ran.wait(timeout: .now() + 10) == .success, "attempt \(attempt): the task did not run")
            #expect(onLoop.withLock { $0 })
        }
    }

    /// A task a member queues while it handles an event runs at the end of that same round (the
    /// round's time is unchanged), after the member's handling returned; a task that task queues
    /// runs in the same round too. Every step is on the loop's queue.
    @Test func aTaskQueuedDuringARoundRunsAtItsEnd() throws {
        let loop = EventLoop(index: 43, sweepInterval: .seconds(3600))
        let pair = memberSocketPair()
        defer { close(pair[0]); close(pair[1]) }
        let member = QueueingMember(descriptor: pair[0], loop: loop)
        #expect(loop.queue.sync { loop.register(member, descriptor: pair[0]) })
        #expect(waitUntilAsleep("dcserve.loop.43"))
        _ = write(pair[1], "x", 1)
        #expect(member.done.wait(timeout: .now() + 10) == .success)
        let log = member.log.withLock { $0 }
        #expect(log.map(\.0) == ["event", "event end", "task", "nested task"])
        #expect(Set(log.map(\.1)).count == 1, "all in one round: \(log)")
        let allOnQueue = log.allSatisfy { $0.2 }
        #expect(allOnQueue)
        loop.queue.sync { loop.deregister(member, descriptor: pair[0]) }
    }

    /// A task queued by code running on the loop's queue outside a round (`queue.async`, a timer)
    /// also runs: the loop's thread is woken for it.
    @Test func aTaskQueuedFromTheQueueOutsideARoundRuns() {
        let loop = EventLoop(index: 44, sweepInterval: .seconds(3600))
        #expect(waitUntilAsleep("dcserve.loop.44"))
        let ran = DispatchSemaphore(value: 0)
        loop.queue.async { loop.execute { ran.signal() } }
        #expect(ran.wait(timeout: .now() + 10) == .success)
    }
}
