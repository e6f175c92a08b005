import CLinux
import Dispatch
import Locking

/// Two byte streams joined on their event loop: what one end sends is written to the other, both
/// ways, until both have ended. What an HTTP proxy does with a connection after `101 Switching
/// Protocols` (WebSocket); it knows nothing of the protocol carried.
///
/// - Back-pressure: per direction, at most `maxBufferedBytesPerDirection` bytes read from one end wait
///   for the other; while that many wait, the first end is not read (its peer's sends then block in
///   TCP). Bytes are read into the loop's scratch buffer and written on at once; only what the other
///   end does not take is copied aside, so an idle tunnel holds no buffer.
/// - Half-close: an end's end of stream (FIN, TLS close_notify) becomes, once what it sent before is
///   written, a `shutdownOutput()` of the other end; the other direction goes on. The tunnel closes
///   both sockets when both directions ended, when a read or write fails (reset), or when no byte
///   moved either way for `idleTimeout`.
/// - Fairness: a turn reads at most a few chunks from one end, then yields to the loop's other members.
///
/// Lifetime: ``start(_:_:settings:)`` registers both ends with one loop, which holds the tunnel until
/// it closes: the connections' common loop, or an earlier loop of its group that is idle at that
/// moment (`EventLoopGroup.gatheringLoop(from:)`: light tunnel traffic gathers on few loops, which
/// then serve more messages per wake-up). Thread-safety (why `@unchecked Sendable` is sound): every
/// property is used on that loop's queue only (the `EventLoopMember` contract); `start` hops there.
public final class ByteTunnel: @unchecked Sendable {
    public struct Settings: Sendable {
        /// No byte either way for this long closes the tunnel.
        public var idleTimeout: Duration
        /// Bytes read from one end that may wait for the other before reading pauses.
        public var maxBufferedBytesPerDirection: Int
        /// Where opened and closed tunnels and bytes are counted (nil: nowhere).
        public var counters: ByteTunnelCounters?

        public init(idleTimeout: Duration, maxBufferedBytesPerDirection: Int = ByteTunnel.defaultBufferedBytes,
                    counters: ByteTunnelCounters? = nil) {
            self.idleTimeout = idleTimeout
            self.maxBufferedBytesPerDirection = maxBufferedBytesPerDirection
            self.counters = counters
        }
    }

    /// The default bound per direction: 64 KiB.
    public static let defaultBufferedBytes = 64 << 10

    /// One end: an `EventLoopMember` for its socket (events carry the member's id, so each end is
    /// its own member). Holds the tunnel until the tunnel closes.
    final class End: EventLoopMember {
        let id = EventLoopMemberID.next()
        let index: Int
        let transport: any ByteTransport
        var tunnel: ByteTunnel?
        var registered = false
        /// Input may be waiting (edge-triggered registration): starts true, since a TLS transport may
        /// hold decrypted bytes that raise no edge.
        var readReady = true
        var peerHalfClosed = false
        /// A read returned end of stream.
        var inputEnded = false
        /// `shutdownOutput()` was called.
        var outputShut = false
        /// A write returned `.wouldBlock`: the next write edge resumes writing.
        var waitingWritable = false
        /// TLS: a read must wait for writability, or a write for readability.
        var readWaitsForWritable = false
        var writeWaitsForReadable = false

        init(index: Int, transport: any ByteTransport) {
            self.index = index
            self.transport = transport
        }

        /// A write returned `.wouldBlock`: wait for the write edge (for TLS, maybe a read edge).
        func writeBlocked() {
            waitingWritable = true
            if transport.writeNeedsReadable { writeWaitsForReadable = true }
        }

        func handleEvents(_ mask: UInt32) { tunnel?.event(self, mask) }
        func checkDeadline(_ now: DispatchTime) { tunnel?.checkDeadline(now) }
        func readPending() { tunnel?.readPending(self) }
    }

    /// Bytes read from `ends[i]` waiting to be written to the other end: `pending[i][pendingStart[i]...]`.
    private var pending: [[UInt8]] = [[], []]
    private var pendingStart = [0, 0]
    private let ends: [End]
    private let loop: EventLoop
    private let settings: Settings
    private let scratch: UnsafeMutableRawBufferPointer
    /// `settings.idleTimeout` in nanoseconds, and the uptime (nanoseconds) at which the tunnel closes
    /// unless a byte moves before.
    private let idleNanoseconds: UInt64
    private var deadline: UInt64
    private var closed = false

    private init(_ first: DetachedConnection, _ second: DetachedConnection, loop: EventLoop, settings: Settings) {
        ends = [End(index: 0, transport: first.transport), End(index: 1, transport: second.transport)]
        self.loop = loop
        self.settings = settings
        scratch = ByteTunnel.scratch(for: loop)
        pending[0] = second.pendingOutput + first.bufferedInput
        pending[1] = first.pendingOutput + second.bufferedInput
        idleNanoseconds = UInt64(settings.idleTimeout.clampedNanoseconds)
        deadline = .max
    }

    /// Joins `first` and `second` (which must share one event loop; else both are closed) and starts
    /// moving bytes, on that loop or an earlier idle one of its group (see the type's Lifetime). What `first` had read beyond its HTTP message goes to `second` after what
    /// `second` had queued, and the same the other way. Call from any thread.
    public static func start(_ first: DetachedConnection, _ second: DetachedConnection, settings: Settings) {
        guard first.loop === second.loop else {
            first.loop.execute { first.close() }
            second.loop.execute { second.close() }
            return
        }
        let loop = first.loop
        let begin: @Sendable () -> Void = {
            guard first.take() else { second.close(); return }
            guard second.take() else { first.transport.close(); return }
            // Both sockets are out of every loop now: the tunnel may live on another loop.
            let home = loop.group?.gatheringLoop(from: loop) ?? loop
            if home === loop {
                ByteTunnel(first, second, loop: loop, settings: settings).run()
            } else {
                home.execute { ByteTunnel(first, second, loop: home, settings: settings).run() }
            }
        }
        if loop.isCurrent { begin() } else { loop.execute(begin) }
    }

    private func run() {
        settings.counters?.recordOpened()
        touch()
        for end in ends {
            end.tunnel = self
            guard loop.register(end, descriptor: end.transport.descriptor) else { close(); return }
            end.registered = true
        }
        pump(from: 0)
        pump(from: 1)
    }

    // MARK: Events

    private func event(_ end: End, _ mask: UInt32) {
        guard !closed else { return }
        if mask & (EPOLLOUT.rawValue | EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 {
            end.waitingWritable = false
            if end.readWaitsForWritable { end.readWaitsForWritable = false; end.readReady = true }
        }
        if mask & ReadinessMask.readable != 0 {
            end.readReady = true
            if end.writeWaitsForReadable { end.writeWaitsForReadable = false; end.waitingWritable = false }
        }
        if mask & ReadinessMask.peerClosed != 0 { end.peerHalfClosed = true }
        pump(from: end.index)       // reads from this end
        pump(from: 1 - end.index)   // writes to this end
    }

    private func readPending(_ end: End) {
        guard !closed else { return }
        pump(from: end.index)
    }

    private func checkDeadline(_ now: DispatchTime) {
        if !closed && now.uptimeNanoseconds >= deadline { close() }
    }

    private func touch() {
        let (sum, overflow) = loop.now.uptimeNanoseconds.addingReportingOverflow(idleNanoseconds)
        deadline = overflow ? .max : sum
    }

    // MARK: Moving bytes

    /// Reads from at most this many chunks from one end per turn.
    private static let readsPerTurn = 16

    /// Moves bytes from `ends[i]` to the other end: writes what waits, reads while the bound allows
    /// and the end has input, shuts the other end's output after the end of stream.
    private func pump(from i: Int) {
        let source = ends[i], sink = ends[1 - i]
        var reads = 0
        var moved = false
        defer { if moved && !closed { touch() } }
        while !closed {
            var waiting = pending[i].count - pendingStart[i]
            if waiting > 0 && !sink.waitingWritable {
                let start = pendingStart[i]
                let result = pending[i].withUnsafeBytes { sink.transport.write(UnsafeRawBufferPointer(rebasing: $0[start...]), more: false) }
                switch result {
                case .bytes(let n):
                    moved = true
                    settings.counters?.record(bytes: n, fromFirst: i == 0)
                    pendingStart[i] += n
                    waiting -= n
                    if waiting == 0 { pending[i] = []; pendingStart[i] = 0 }
                    continue
                case .wouldBlock:
                    sink.writeBlocked()
                case .failed, .endOfStream:
                    close()
                    return
                }
            }
            if waiting == 0 && source.inputEnded {
                if !sink.outputShut {
                    sink.outputShut = true
                    sink.transport.shutdownOutput()
                    if ends.allSatisfy(\.outputShut) { close() }
                }
                return
            }
            let room = settings.maxBufferedBytesPerDirection - waiting
            guard source.readReady && room > 0 else { return }
            if reads == Self.readsPerTurn { loop.scheduleRead(source); return }
            reads += 1
            let request = min(room, scratch.count)
            switch source.transport.read(into: UnsafeMutableRawBufferPointer(rebasing: scratch[0..<request])) {
            case .bytes(let n):
                moved = true
                if !source.peerHalfClosed && source.transport.inputDrained(afterReading: n, of: request) { source.readReady = false }
                take(UnsafeRawBufferPointer(rebasing: scratch[0..<n]), from: i, waiting: waiting)
            case .wouldBlock:
                source.readReady = false
                if source.transport.readNeedsWritable { source.readWaitsForWritable = true }
                return
            case .endOfStream:
                source.readReady = false
                source.inputEnded = true
            case .failed:
                close()
                return
            }
        }
    }

    /// Bytes just read from `ends[i]`: written on at once when nothing waits before them, and what the
    /// other end does not take is kept.
    private func take(_ bytes: UnsafeRawBufferPointer, from i: Int, waiting: Int) {
        let sink = ends[1 - i]
        var offset = 0
        if waiting == 0 && !sink.waitingWritable {
            switch sink.transport.write(bytes, more: false) {
            case .bytes(let n):
                settings.counters?.record(bytes: n, fromFirst: i == 0)
                offset = n
            case .wouldBlock:
                sink.writeBlocked()
            case .failed, .endOfStream:
                close()
                return
            }
        }
        if offset < bytes.count {
            if pendingStart[i] > 0 && pendingStart[i] == pending[i].count { pending[i] = []; pendingStart[i] = 0 }
            pending[i].append(contentsOf: bytes[offset...])
        }
    }

    // MARK: Closing

    private func close() {
        guard !closed else { return }
        closed = true
        for end in ends {
            if end.registered { loop.deregister(end, descriptor: end.transport.descriptor); end.registered = false }
            end.transport.close()
            end.tunnel = nil
        }
        pending = [[], []]
        settings.counters?.recordClosed()
    }

    // MARK: Scratch buffers

    /// One read buffer per event loop, shared by the loop's tunnels (each uses it only within one
    /// call on the loop's queue). Never freed: loops live as long as the process.
    private static let scratchBuffers = Locked<[ObjectIdentifier: Scratch]>([:])

    /// A loop's read buffer (used on that loop's queue only, hence `@unchecked Sendable`).
    private struct Scratch: @unchecked Sendable {
        let buffer: UnsafeMutableRawBufferPointer
    }

    private static func scratch(for loop: EventLoop) -> UnsafeMutableRawBufferPointer {
        scratchBuffers.withLock { buffers in
            if let scratch = buffers[ObjectIdentifier(loop)] { return scratch.buffer }
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: defaultBufferedBytes, alignment: 16)
            buffers[ObjectIdentifier(loop)] = Scratch(buffer: buffer)
            return buffer
        }
    }
}
