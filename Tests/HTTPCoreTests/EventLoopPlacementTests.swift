#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Testing
@testable import HTTPCore

/// Waits (bounded) until every loop of `group` is idle; true if they all were at once.
private func waitUntilIdle(_ group: EventLoopGroup) -> Bool {
    for _ in 0..<2000 {
        if group.loops.allSatisfy(\.isIdle) { return true }
        usleep(1_000)
    }
    return false
}

/// Keeps `loop` busy (a task that waits) until `release` is signalled; returns once the task runs.
func occupy(_ loop: EventLoop, until release: DispatchSemaphore) -> Bool {
    let running = DispatchSemaphore(value: 0)
    loop.execute {
        running.signal()
        release.wait()
    }
    return running.wait(timeout: .now() + 10) == .success
}

/// Makes `loop` busy for most of a load window (one round that closes the window before, then one
/// kept busy for 150 ms) and returns its recent load afterwards (-1 if a round did not run).
func loadHeavily(_ loop: EventLoop) -> Int {
    for wait in [120_000, 150_000] as [UInt32] {
        let release = DispatchSemaphore(value: 0)
        guard occupy(loop, until: release) else { return -1 }
        usleep(wait)
        release.signal()
        // Each in a round of its own.
        var waited = 0
        while !loop.isIdle && waited < 2000 { usleep(1_000); waited += 1 }
    }
    let done = DispatchSemaphore(value: 0)
    loop.execute { done.signal() }
    return done.wait(timeout: .now() + 10) == .success ? loop.recentLoadPercent : -1
}

@Suite("EventLoopGroup placement: new members round-robin; a loop's idleness and recent load")
struct EventLoopPlacementTests {
    /// Loops whose threads wait for events with nothing queued are idle; one running a task is not.
    @Test func aLoopRunningATaskIsNotIdle() {
        let group = EventLoopGroup(count: 1, sweepInterval: .seconds(3600))
        let loop = group.loops[0]
        #expect(waitUntilIdle(group))
        let release = DispatchSemaphore(value: 0)
        #expect(occupy(loop, until: release))
        #expect(!loop.isIdle)
        release.signal()
        #expect(waitUntilIdle(group))
    }

    /// New connections are spread over all loops in turn, idle or not.
    @Test func newMembersGoRoundRobin() {
        let group = EventLoopGroup(count: 2, sweepInterval: .seconds(3600))
        #expect(waitUntilIdle(group))
        let chosen = (0..<6).map { _ in group.nextLoop().index }
        #expect(chosen == [0, 1, 0, 1, 0, 1], "\(chosen)")
    }

    /// A loop's recent load is the share of its last load window spent in rounds: high after rounds
    /// that kept it busy, low after a window of waiting.
    @Test func recentLoadFollowsTheTimeSpentInRounds() {
        let group = EventLoopGroup(count: 1, sweepInterval: .seconds(3600))
        let loop = group.loops[0]
        #expect(loadHeavily(loop) >= 50)
        // A window of mostly waiting: ~150 ms asleep, then a short round closes it.
        usleep(150_000)
        let done = DispatchSemaphore(value: 0)
        loop.execute { done.signal() }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(waitUntilIdle(group))
        #expect(loop.recentLoadPercent < 50)
    }
}
