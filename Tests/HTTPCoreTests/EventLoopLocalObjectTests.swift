import Dispatch
import Testing
@testable import HTTPCore

/// Objects kept per loop under a key (an HTTP client's pool): each loop its own, keys never reused.
@Suite struct EventLoopLocalObjectTests {
    final class Box: Sendable {}

    @Test func eachLoopKeepsItsOwnObjectUnderAKey() {
        let group = EventLoopGroup(count: 2, sweepInterval: .milliseconds(100))
        let (a, b) = (group.loops[0], group.loops[1])
        let key = EventLoop.makeLocalKey()
        let (first, second) = (Box(), Box())
        a.queue.sync { a.setLocalObject(first, for: key) }
        b.queue.sync {
            #expect(b.localObject(for: key) == nil, "another loop's table is its own")
            b.setLocalObject(second, for: key)
        }
        a.queue.sync { #expect(a.localObject(for: key) === first) }
        b.queue.sync { #expect(b.localObject(for: key) === second) }
        a.queue.sync {
            a.setLocalObject(nil, for: key)
            #expect(a.localObject(for: key) == nil)
        }
        withExtendedLifetime((first, second)) {}
    }

    @Test func keysAreNeverHandedOutTwice() {
        let keys = (0..<1000).map { _ in EventLoop.makeLocalKey() }
        #expect(Set(keys).count == keys.count)
    }
}
