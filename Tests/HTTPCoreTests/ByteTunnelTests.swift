#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Testing
@testable import HTTPCore

/// `ByteTunnel` between two socket pairs: the tests hold the outer ends (blocking, with a receive
/// timeout), the tunnel the inner ones (non-blocking) on a real event loop.
@Suite struct ByteTunnelTests {
    /// A connected pair: `outer` for the test, `inner` (non-blocking) for the tunnel.
    private static func pair() -> (outer: Int32, inner: Int32) {
        var fds: [Int32] = [0, 0]
        precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fds[0], SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
        return (fds[0], fds[1])
    }

    private static func send(_ fd: Int32, _ bytes: [UInt8]) {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + done, bytes.count - done, Int32(MSG_NOSIGNAL)) }
            precondition(n > 0)
            done += n
        }
    }

    /// Reads exactly `count` bytes (fewer if the stream ends or the timeout passes).
    private static func receive(_ fd: Int32, _ count: Int) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while out.count < count {
            let n = read(fd, &buffer, min(buffer.count, count - out.count))
            if n <= 0 { break }
            out += buffer[0..<n]
        }
        return out
    }

    /// True when the stream ended (read returns 0) within the receive timeout.
    private static func ended(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        return read(fd, &byte, 1) == 0
    }

    private struct Setup {
        let group: EventLoopGroup
        let client: Int32
        let upstream: Int32
        let counters: ByteTunnelCounters
    }

    /// A tunnel whose first end carries `clientInput` already read and `clientOutput` not yet written.
    private static func tunnel(idle: Duration = .seconds(30), clientInput: [UInt8] = [], clientOutput: [UInt8] = []) -> Setup {
        let group = EventLoopGroup(count: 1, sweepInterval: .milliseconds(20))
        let loop = group.nextLoop()
        let a = pair(), b = pair()
        let counters = ByteTunnelCounters()
        ByteTunnel.start(DetachedConnection(transport: PlainTCPTransport(descriptor: a.inner), loop: loop,
                                            bufferedInput: clientInput, pendingOutput: clientOutput),
                         DetachedConnection(transport: PlainTCPTransport(descriptor: b.inner), loop: loop),
                         settings: .init(idleTimeout: idle, counters: counters))
        return Setup(group: group, client: a.outer, upstream: b.outer, counters: counters)
    }

    @Test func bytesFlowBothWaysAfterWhatWasBuffered() {
        let t = Self.tunnel(clientInput: Array("early".utf8), clientOutput: Array("HTTP/1.1 101 ...\r\n\r\n".utf8))
        defer { close(t.client); close(t.upstream) }
        #expect(Self.receive(t.client, 20) == Array("HTTP/1.1 101 ...\r\n\r\n".utf8))
        #expect(Self.receive(t.upstream, 5) == Array("early".utf8))
        let big = (0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        DispatchQueue.global().async { Self.send(t.client, big) }
        #expect(Self.receive(t.upstream, big.count) == big)
        Self.send(t.upstream, Array("answer".utf8))
        #expect(Self.receive(t.client, 6) == Array("answer".utf8))
        #expect(t.counters.opened == 1 && t.counters.bytesFromFirst == 5 + big.count)
    }

    @Test func halfCloseIsPassedOnAndTheOtherDirectionGoesOn() {
        let t = Self.tunnel()
        defer { close(t.client); close(t.upstream) }
        Self.send(t.client, Array("last words".utf8))
        shutdown(t.client, Int32(SHUT_WR))
        #expect(Self.receive(t.upstream, 10) == Array("last words".utf8))
        #expect(Self.ended(t.upstream))  // the client's FIN reached the upstream
        Self.send(t.upstream, Array("reply after the FIN".utf8))
        #expect(Self.receive(t.client, 19) == Array("reply after the FIN".utf8))
        shutdown(t.upstream, Int32(SHUT_WR))
        #expect(Self.ended(t.client))
        // Both directions ended: the tunnel closed both sockets.
        var waited = 0
        while t.counters.closed == 0 && waited < 500 { usleep(10_000); waited += 1 }
        #expect(t.counters.closed == 1 && t.counters.open == 0)
    }

    @Test func idleTimeoutClosesBothEnds() {
        let t = Self.tunnel(idle: .milliseconds(200))
        defer { close(t.client); close(t.upstream) }
        Self.send(t.client, [1, 2, 3])
        #expect(Self.receive(t.upstream, 3) == [1, 2, 3])
        #expect(Self.ended(t.client) && Self.ended(t.upstream))
    }

    @Test func aReaderThatNeverReadsBlocksTheWriterInsteadOfGrowingABuffer() {
        let t = Self.tunnel()
        defer { close(t.client); close(t.upstream) }
        _ = fcntl(t.upstream, F_SETFL, fcntl(t.upstream, F_GETFL) | O_NONBLOCK)
        let chunk = [UInt8](repeating: 7, count: 65536)
        var written = 0
        var blockedRounds = 0
        // Write until the upstream side stays blocked for 20 tries in a row (the tunnel stopped reading),
        // at most 256 MiB: without back-pressure the tunnel would take it all.
        while blockedRounds < 20 && written < 256 << 20 {
            let n = chunk.withUnsafeBytes { Glibc.send(t.upstream, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 { written += n; blockedRounds = 0 } else { blockedRounds += 1; usleep(10_000) }
        }
        #expect(blockedRounds == 20 && written < 64 << 20)
        // The client then reads it all, in order: nothing was dropped while reading paused.
        _ = fcntl(t.client, F_SETFL, fcntl(t.client, F_GETFL))
        #expect(Self.receive(t.client, written) == [UInt8](repeating: 7, count: written))
    }

    // MARK: Which loop a tunnel lives on

    /// Waits (bounded) until `loop` is idle; true if it was.
    private static func waitUntilIdle(_ loop: EventLoop) -> Bool {
        for _ in 0..<2000 {
            if loop.isIdle { return true }
            usleep(1_000)
        }
        return false
    }

    /// Expects the tunnel to carry `message` from client to upstream while `loop` runs a task that
    /// holds it (released when the test ends: the semaphore is returned).
    private func expectCarries(_ t: (client: Int32, upstream: Int32), _ message: String, whileBusy loop: EventLoop) -> DispatchSemaphore {
        let release = DispatchSemaphore(value: 0)
        #expect(occupy(loop, until: release))
        Self.send(t.client, Array(message.utf8))
        #expect(Self.receive(t.upstream, message.utf8.count) == Array(message.utf8))
        return release
    }

    /// A tunnel of two connections of loop 1 (`group` has 2 loops); the outer ends.
    private static func tunnelOnSecondLoop(_ group: EventLoopGroup) -> (client: Int32, upstream: Int32) {
        let loop = group.loops[1]
        let a = pair(), b = pair()
        ByteTunnel.start(DetachedConnection(transport: PlainTCPTransport(descriptor: a.inner), loop: loop),
                         DetachedConnection(transport: PlainTCPTransport(descriptor: b.inner), loop: loop),
                         settings: .init(idleTimeout: .seconds(30)))
        return (a.outer, b.outer)
    }

    /// Light load gathers: a tunnel whose connections were on loop 1 moves to loop 0 when that is idle,
    /// so it carries bytes while loop 1 is kept busy.
    @Test func aTunnelMovesToAnIdleEarlierLoop() {
        let group = EventLoopGroup(count: 2, sweepInterval: .seconds(3600))
        #expect(Self.waitUntilIdle(group.loops[0]))
        let t = Self.tunnelOnSecondLoop(group)
        defer { close(t.client); close(t.upstream) }
        Self.send(t.client, Array("before".utf8))
        #expect(Self.receive(t.upstream, 6) == Array("before".utf8))
        let release = expectCarries(t, "while loop 1 is busy", whileBusy: group.loops[1])
        defer { release.signal() }
        Self.send(t.upstream, Array("back".utf8))
        #expect(Self.receive(t.client, 4) == Array("back".utf8))
    }

    /// An earlier loop that is busy at that instant but was lightly loaded still takes the tunnel:
    /// started while loop 0 runs a task, it then carries bytes while loop 1 is kept busy.
    @Test func aTunnelMovesToALightlyLoadedEarlierLoopThatIsBusyAtThatInstant() {
        let group = EventLoopGroup(count: 2, sweepInterval: .seconds(3600))
        #expect(Self.waitUntilIdle(group.loops[0]))
        let first = DispatchSemaphore(value: 0)
        #expect(occupy(group.loops[0], until: first))
        let t = Self.tunnelOnSecondLoop(group)
        defer { close(t.client); close(t.upstream) }
        #expect(Self.waitUntilIdle(group.loops[1]))  // the start ran on loop 1
        first.signal()
        Self.send(t.client, Array("before".utf8))
        #expect(Self.receive(t.upstream, 6) == Array("before".utf8))
        expectCarries(t, "while loop 1 is busy", whileBusy: group.loops[1]).signal()
    }

    /// A tunnel stays on its connections' loop when the earlier loop is neither idle nor lightly
    /// loaded: it carries bytes while loop 0 is kept busy.
    @Test func aTunnelStaysOnItsLoopWhenTheEarlierLoopIsBusy() {
        let group = EventLoopGroup(count: 2, sweepInterval: .seconds(3600))
        #expect(loadHeavily(group.loops[0]) >= 50)
        let release = DispatchSemaphore(value: 0)
        defer { release.signal() }
        #expect(occupy(group.loops[0], until: release))
        let t = Self.tunnelOnSecondLoop(group)
        defer { close(t.client); close(t.upstream) }
        Self.send(t.client, Array("while loop 0 is busy".utf8))
        #expect(Self.receive(t.upstream, 20) == Array("while loop 0 is busy".utf8))
        Self.send(t.upstream, Array("back".utf8))
        #expect(Self.receive(t.client, 4) == Array("back".utf8))
    }
}
