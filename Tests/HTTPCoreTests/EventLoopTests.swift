#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization
import Testing
@testable import HTTPCore

/// A member that reads a socket pair's end and reports what arrived.
private final class EchoMember: EventLoopMember, @unchecked Sendable {
    let id = EventLoopMemberID.next()
    let descriptor: Int32
    let received = Mutex<[UInt8]>([])
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

@Suite("EventLoop: members of any kind on one loop")
struct EventLoopTests {
    @Test func membersGetTheirEventsAndDeadlineSweeps() throws {
        let group = EventLoopGroup(count: 2, sweepInterval: .milliseconds(10), linger: .zero)
        #expect(group.loops.map(\.index) == [0, 1])
        let loop = group.nextLoop()
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { close(pair[0]); close(pair[1]) }
        _ = fcntl(pair[0], F_SETFL, fcntl(pair[0], F_GETFL) | O_NONBLOCK)
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
