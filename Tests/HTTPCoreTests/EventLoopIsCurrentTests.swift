#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Dispatch
import Locking
import Testing
@testable import HTTPCore

/// A member that notes `loop.isCurrent` (and the thread's name) in its event and deadline callbacks.
private final class CurrentNotingMember: EventLoopMember, @unchecked Sendable {
    let id = EventLoopMemberID.next()
    let descriptor: Int32
    let loop: EventLoop
    let onEvent = Locked<[(current: Bool, thread: String)]>([])
    let onDeadline = Locked<[(current: Bool, thread: String)]>([])

    init(descriptor: Int32, loop: EventLoop) { (self.descriptor, self.loop) = (descriptor, loop) }

    func handleEvents(_ mask: UInt32) {
        guard drainedInput(descriptor, mask) else { return }
        let entry = (loop.isCurrent, currentThreadName())
        onEvent.withLock { $0.append(entry) }
    }

    func checkDeadline(_ now: DispatchTime) {
        let entry = (loop.isCurrent, currentThreadName())
        onDeadline.withLock { $0.append(entry) }
    }
}

/// Runs `body` on `loop`'s queue with `async` from a thread that is not the loop's, and returns its result.
private func onQueueAsync<T: Sendable>(_ loop: EventLoop, _ body: @escaping @Sendable () -> T) -> T? {
    let result = Locked<T?>(nil)
    let done = DispatchSemaphore(value: 0)
    loop.queue.async {
        result.withLock { $0 = body() }
        done.signal()
    }
    guard done.wait(timeout: .now() + 10) == .success else { return nil }
    return result.withLock { $0 }
}

@Suite("EventLoop.isCurrent: on the loop's queue, whichever thread runs it")
struct EventLoopIsCurrentTests {
    /// True in a round on the loop's own thread (a member's callback, a task); true in work Dispatch
    /// runs on `queue` on another thread (`queue.async`, `queue.sync`, the sweep timer); false on
    /// any other thread, including another loop's thread and another loop's queue.
    @Test func trueExactlyOnTheLoopsQueue() throws {
        let loop = EventLoop(index: 50, sweepInterval: .milliseconds(10))
        let other = EventLoop(index: 51, sweepInterval: .seconds(3600))
        #expect(!loop.isCurrent)  // the test's own thread

        // A member's event callback and deadline sweep.
        let pair = memberSocketPair()
        defer { close(pair[0]); close(pair[1]) }
        let member = CurrentNotingMember(descriptor: pair[0], loop: loop)
        #expect(loop.queue.sync { loop.register(member, descriptor: pair[0]) })
        _ = write(pair[1], "x", 1)
        for _ in 0..<1000 where member.onEvent.withLock({ $0.isEmpty }) || member.onDeadline.withLock({ $0.isEmpty }) {
            usleep(5_000)
        }
        let events = member.onEvent.withLock { $0 }
        #expect(events.count == 1)
        #expect(events.allSatisfy { $0.current && $0.thread == "dcserve.loop.50" }, "\(events)")
        let sweeps = member.onDeadline.withLock { $0 }
        #expect(!sweeps.isEmpty)
        // The sweep timer is a Dispatch source: it runs on a worker thread, inside the queue.
        #expect(sweeps.allSatisfy { $0.current && $0.thread != "dcserve.loop.50" }, "\(sweeps)")
        loop.queue.sync { loop.deregister(member, descriptor: pair[0]) }

        // A task, on the loop's thread.
        let inTask = Locked<(Bool, Bool, String)?>(nil)
        let ran = DispatchSemaphore(value: 0)
        loop.execute {
            inTask.withLock { $0 = (loop.isCurrent, other.isCurrent, currentThreadName()) }
            ran.signal()
        }
        #expect(ran.wait(timeout: .now() + 10) == .success)
        let task = inTask.withLock { $0 }
        #expect(task?.0 == true)
        #expect(task?.1 == false)
        #expect(task?.2 == "dcserve.loop.50")

        // Work put on the queue directly runs on a Dispatch thread (or the caller's, for `sync`).
        let viaAsync = onQueueAsync(loop) { (loop.isCurrent, other.isCurrent, currentThreadName()) }
        #expect(viaAsync?.0 == true)
        #expect(viaAsync?.1 == false)
        #expect(viaAsync?.2 != "dcserve.loop.50")
        #expect(loop.queue.sync { loop.isCurrent })
        #expect(loop.queue.sync { !other.isCurrent })

        // Another loop's thread and queue.
        let onOther = Locked<Bool?>(nil)
        let otherRan = DispatchSemaphore(value: 0)
        other.execute {
            onOther.withLock { $0 = loop.isCurrent }
            otherRan.signal()
        }
        #expect(otherRan.wait(timeout: .now() + 10) == .success)
        #expect(onOther.withLock { $0 } == false)
        #expect(onQueueAsync(other) { loop.isCurrent } == false)
        #expect(!loop.isCurrent)
    }
}
