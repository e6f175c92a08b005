#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Dispatch
import Foundation
import Synchronization
import Testing
@testable import HTTPCore
import Locking

/// A member that reads a socket pair's end and reports what arrived.
private final class EchoMember: EventLoopMember, @unchecked Sendable {
    let id = EventLoopMemberID.next()
    let descriptor: Int32
    let received = Locked<[UInt8]>([])
    let deadlinesChecked = Atomic<Int>(0)

    init(descriptor: Int32) { self.descriptor = descriptor }

    func handleEvents(_ mask: UInt32) {
        guard mask & 0x001 != 0 else { return }  // EPOLLIN
        var buffer = [UInt8](repeating: 0, count: 256)
        while true {
            let n = read(descriptor, &buffer, buffer.count)
            if n <= 0 { return }
            received.withLock { $0 += buffer[0..<n] }
        }
    }

    func checkDeadline(_ now: DispatchTime) { deadlinesChecked.add(1, ordering: .relaxed) }
}

/// What members of one test did, in order (shared between them and the test).
private final class EventLog: Sendable {
    private let entries = Locked<[String]>([])
    func append(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
}

/// A member that, on input, drains it and defers its "write" (`EventLoop.deferFlush`), logging both;
/// its deferred write may resume reading (`scheduleRead`) once, as a completed response does.
private final class DeferringMember: EventLoopMember, @unchecked Sendable {
    let id = EventLoopMemberID.next()
    let name: String
    let descriptor: Int32
    let loop: EventLoop
    let log: EventLog
    var resumeOnFlush = false

    init(_ name: String, descriptor: Int32, loop: EventLoop, log: EventLog) {
        (self.name, self.descriptor, self.loop, self.log) = (name, descriptor, loop, log)
    }

    func handleEvents(_ mask: UInt32) {
        guard drainedInput(descriptor, mask) else { return }
        let deferred = loop.deferFlush(self)
        log.append("handle \(name) deferred=\(deferred)")
    }

    func flushDeferred() {
        log.append("flush \(name)")
        if resumeOnFlush {
            resumeOnFlush = false
            loop.scheduleRead(self)
        }
    }

    func readPending() {
        log.append("readPending \(name)")
        _ = loop.deferFlush(self)  // answering again: its write joins the same batch
    }

    func checkDeadline(_ now: DispatchTime) {}
}

/// A member whose handling of input holds the loop's thread until the test releases it, so that
/// events arriving meanwhile are harvested together in the next round.
private final class GateMember: EventLoopMember, @unchecked Sendable {
    let id = EventLoopMemberID.next()
    let descriptor: Int32
    let entered = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)

    init(descriptor: Int32) { self.descriptor = descriptor }

    func handleEvents(_ mask: UInt32) {
        guard mask & 0x001 != 0 else { return }  // EPOLLIN
        var buffer = [UInt8](repeating: 0, count: 16)
        while read(descriptor, &buffer, buffer.count) > 0 {}
        entered.signal()
        _ = release.wait(timeout: .now() + 10)
    }

    func checkDeadline(_ now: DispatchTime) {}
}

/// A member that notes, for every input, the thread it was handled on and whether that was inside
/// the loop's queue.
private final class ThreadNotingMember: EventLoopMember, @unchecked Sendable {
    let id = EventLoopMemberID.next()
    let descriptor: Int32
    let loop: EventLoop
    let seen = Mutex<[(thread: pthread_t, name: String, onQueue: Bool)]>([])

    init(descriptor: Int32, loop: EventLoop) { (self.descriptor, self.loop) = (descriptor, loop) }

    func handleEvents(_ mask: UInt32) {
        guard drainedInput(descriptor, mask) else { return }
        var name = [CChar](repeating: 0, count: 32)
        dcserve_thread_name(&name)
        let entry = (pthread_self(), String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), loop.isCurrent)
        seen.withLock { $0.append(entry) }
    }

    func checkDeadline(_ now: DispatchTime) {}
}

/// The names of this process's threads (from /proc/self/task/*/comm).
private func threadNames() -> [String] {
    guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") else { return [] }
    return tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
        .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
}

@Suite("EventLoop: members of any kind on one loop")
struct EventLoopTests {
    @Test func membersGetTheirEventsAndDeadlineSweeps() throws {
        let group = EventLoopGroup(count: 2, sweepInterval: .milliseconds(10))
        #expect(group.loops.map(\.index) == [0, 1])
        let loop = group.nextLoop()
        let pair = memberSocketPair()
        defer { close(pair[0]); close(pair[1]) }
        let member = EchoMember(descriptor: pair[0])
        #expect(loop.queue.sync { loop.register(member, descriptor: pair[0]) })
        _ = write(pair[1], "hello", 5)
        for _ in 0..<500 where member.received.withLock({ $0.count }) < 5 || member.deadlinesChecked.load(ordering: .relaxed) == 0 {
            usleep(10_000)
        }
        #expect(member.received.withLock { $0 } == Array("hello".utf8))
        #expect(member.deadlinesChecked.load(ordering: .relaxed) > 0)
        loop.queue.sync { loop.deregister(member, descriptor: pair[0]) }
        let before = member.received.withLock { $0.count }
        _ = write(pair[1], "more", 4)
        loop.queue.sync {}  // a deregistered member gets no more events
        usleep(20_000)
        loop.queue.sync {}
        #expect(member.received.withLock { $0.count } == before)
    }

    /// The writes of a round leave together: every member handled in the round asks to write
    /// (`deferFlush` answers true), and the loop calls each one's `flushDeferred` only after all of
    /// them were handled, still inside the batch (a read a write resumes, and that read's own write,
    /// run before the batch ends). Outside a batch `deferFlush` answers false: write now.
    @Test func writesDeferredInARoundRunAfterEveryMemberOfTheRoundWasHandled() throws {
        let group = EventLoopGroup(count: 1, sweepInterval: .seconds(1))
        let loop = group.loops[0]
        let log = EventLog()
        var members: [(DeferringMember, Int32, Int32)] = []
        for name in ["a", "b", "c"] {
            let pair = memberSocketPair()
            members.append((DeferringMember(name, descriptor: pair[0], loop: loop, log: log), pair[0], pair[1]))
        }
        defer { for (_, a, b) in members { close(a); close(b) } }
        members[1].0.resumeOnFlush = true
        for (member, descriptor, _) in members { #expect(loop.queue.sync { loop.register(member, descriptor: descriptor) }) }
        #expect(loop.queue.sync { loop.deferFlush(members[0].0) } == false)  // not in a batch

        // All three inputs arrive while the loop's thread is held inside a round (by the gate), so
        // the next round harvests them together.
        let gatePair = memberSocketPair()
        defer { close(gatePair[0]); close(gatePair[1]) }
        let gate = GateMember(descriptor: gatePair[0])
        #expect(loop.queue.sync { loop.register(gate, descriptor: gatePair[0]) })
        _ = write(gatePair[1], "g", 1)
        #expect(gate.entered.wait(timeout: .now() + 10) == .success)
        for (_, _, peer) in members { _ = write(peer, "x", 1) }
        gate.release.signal()
        for _ in 0..<500 where log.all.count < 8 { usleep(10_000) }
        loop.queue.sync {}
        let entries = log.all
        let handles = entries.prefix(3)
        #expect(Set(handles) == ["handle a deferred=true", "handle b deferred=true", "handle c deferred=true"])
        #expect(Set(entries[3..<6]) == ["flush a", "flush b", "flush c"])
        #expect(Array(entries[6...]) == ["readPending b", "flush b"])
        for (member, descriptor, _) in members { loop.queue.sync { loop.deregister(member, descriptor: descriptor) } }
        loop.queue.sync { loop.deregister(gate, descriptor: gatePair[0]) }
    }

    /// Every round runs on the loop's own thread, inside its queue: wake-ups spread over time are
    /// all handled on that one thread (no hand-off to Dispatch's worker threads), and work queued on
    /// `queue` meanwhile still runs (the thread waits for events without holding the queue).
    @Test func roundsRunOnTheLoopsOwnThreadInsideItsQueue() throws {
        let group = EventLoopGroup(count: 1, sweepInterval: .seconds(1))
        let loop = group.loops[0]
        let pair = memberSocketPair()
        defer { close(pair[0]); close(pair[1]) }
        let member = ThreadNotingMember(descriptor: pair[0], loop: loop)
        #expect(loop.queue.sync { loop.register(member, descriptor: pair[0]) })
        for round in 1...5 {
            _ = write(pair[1], "x", 1)
            for _ in 0..<500 where member.seen.withLock({ $0.count }) < round { usleep(2_000) }
            // The loop now waits for events; work put on its queue runs meanwhile.
            let ran = DispatchSemaphore(value: 0)
            loop.queue.async { ran.signal() }
            #expect(ran.wait(timeout: .now() + 10) == .success)
            usleep(5_000)
        }
        let seen = member.seen.withLock { $0 }
        #expect(seen.count == 5)
        let allOnQueue = seen.allSatisfy(\.onQueue)
        #expect(allOnQueue)
        #expect(Set(seen.map { UInt($0.thread) }).count == 1)
        let names = Set(seen.map(\.name))
        #expect(names == ["dcserve.loop.0"])
        loop.queue.sync { loop.deregister(member, descriptor: pair[0]) }
    }

    /// The loop's thread ends once the loop is gone (the thread holds only the loop's core, never
    /// the loop itself).
    @Test func aLoopsThreadEndsWithTheLoop() throws {
        var loop: EventLoop? = EventLoop(index: 7, sweepInterval: .seconds(1))
        for _ in 0..<500 where !threadNames().contains("dcserve.loop.7") { usleep(10_000) }
        #expect(threadNames().contains("dcserve.loop.7"))
        loop?.queue.sync {}
        loop = nil
        for _ in 0..<500 where threadNames().contains("dcserve.loop.7") { usleep(10_000) }
        #expect(!threadNames().contains("dcserve.loop.7"))
    }

    /// A registered member that holds its loop keeps the loop, and its thread, working after every
    /// other reference is gone; once the member has left the loop and is released, the thread ends.
    @Test func aMemberHoldingItsLoopKeepsItAliveUntilItLeaves() throws {
        let pair = memberSocketPair()
        defer { close(pair[0]); close(pair[1]) }
        var loop: EventLoop? = EventLoop(index: 8, sweepInterval: .seconds(1))
        var member: ThreadNotingMember? = ThreadNotingMember(descriptor: pair[0], loop: loop!)
        #expect(loop!.queue.sync { loop!.register(member!, descriptor: pair[0]) })
        loop = nil
        usleep(50_000)
        #expect(threadNames().contains("dcserve.loop.8"))
        _ = write(pair[1], "x", 1)
        for _ in 0..<500 where member!.seen.withLock({ $0.isEmpty }) { usleep(10_000) }
        #expect(member!.seen.withLock { $0.map(\.name) } == ["dcserve.loop.8"])
        member!.loop.queue.sync { member!.loop.deregister(member!, descriptor: pair[0]) }
        member = nil
        for _ in 0..<500 where threadNames().contains("dcserve.loop.8") { usleep(10_000) }
        #expect(!threadNames().contains("dcserve.loop.8"))
    }

    /// A loop is never weakly referenced, so the Swift runtime gives it no side table (with one,
    /// every retain and release of the loop, several per request, takes the runtime's slow path).
    /// Checked after the loop did all it does: registered a member, served its events, ran tasks,
    /// swept deadlines, answered `isCurrent`.
    @Test func aLoopInUseHasNoSideTable() throws {
        // The detector itself: a weak reference gives an object a side table.
        let probe = EventLog()
        #expect(!hasSideTable(probe))
        weak var weakProbe = probe
        #expect(hasSideTable(probe))
        _ = weakProbe

        let group = EventLoopGroup(count: 1, sweepInterval: .milliseconds(10))
        let loop = group.loops[0]
        let pair = memberSocketPair()
        defer { close(pair[0]); close(pair[1]) }
        let member = EchoMember(descriptor: pair[0])
        #expect(loop.queue.sync { loop.register(member, descriptor: pair[0]) })
        _ = write(pair[1], "x", 1)
        let ran = DispatchSemaphore(value: 0)
        loop.execute { _ = loop.isCurrent; ran.signal() }
        #expect(ran.wait(timeout: .now() + 10) == .success)
        for _ in 0..<500 where member.received.withLock({ $0.isEmpty }) || member.deadlinesChecked.load(ordering: .relaxed) == 0 {
            usleep(10_000)
        }
        #expect(member.deadlinesChecked.load(ordering: .relaxed) > 0)
        #expect(!hasSideTable(loop))
        loop.queue.sync { loop.deregister(member, descriptor: pair[0]) }
    }

    @Test func memberIDsAreUniqueAcrossThreads() async {
        let ids = await withTaskGroup(of: [UInt64].self) { group in
            for _ in 0..<4 { group.addTask { (0..<1000).map { _ in EventLoopMemberID.next() } } }
            var all: [UInt64] = []
            for await chunk in group { all += chunk }
            return all
        }
        #expect(Set(ids).count == ids.count && !ids.contains(0))
    }
}
