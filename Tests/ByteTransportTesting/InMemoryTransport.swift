#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import HTTPCore
import Locking

/// A `ByteTransport` whose peer is the test, in the manner of SwiftNIO's `EmbeddedChannel`: the test
/// hands in bytes in the pieces it chooses (each `send` is one read's worth, or several when the
/// connection's buffer is smaller), and reads back everything the connection wrote. Writes can be
/// throttled (`bytesPerWrite`, `window`) to exercise back-pressure, and made to fail (a peer that
/// reset the connection).
///
/// The descriptor is one end of a socket pair that carries no data: the connection registers it with
/// its real event loop. With `raisesEdges` (the default) every `send`, `endInput`, `allow` or `reset`
/// writes a byte into the other end, which raises a readable-and-writable edge, so the loop drives
/// the connection exactly as it drives a socket (a `read` that finds nothing to give drains those
/// bytes). Without it the loop sees no edge after the first and the caller delivers readiness itself
/// (on the loop's queue), which makes a run deterministic (the connection fuzzer does that).
/// The transport's own reads never report "drained", so the connection reads until `wouldBlock`.
///
/// Misuse is counted, not trapped, so a caller can assert on it: a read or write after `close`, a
/// write after `shutdownOutput`.
///
/// Thread-safety: all state behind one `Locked`; the connection calls in on its loop's queue, the test
/// from its own thread.
public final class InMemoryTransport: ByteTransport, Sendable {
    public struct State: Sendable {
        /// Bytes the peer sent and the connection has not read, one element per `send`.
        public var input: [[UInt8]] = []
        public var inputEnded = false
        /// Everything the connection wrote, in order.
        public var output: [UInt8] = []
        /// Most bytes one `write` or `sendFile` takes.
        public var bytesPerWrite = Int.max
        /// Bytes the peer still takes before a write would block (`allow` adds to it).
        public var window = Int.max
        public var writesFail = false
        public var outputShutDown = false
        public var closed = false
        /// Number of `write`/`sendFile` calls that took bytes, and that would have blocked.
        public var writes = 0
        public var blockedWrites = 0
        /// Reads, writes or file sends attempted after `close`.
        public var usesAfterClose = 0
        /// Writes or file sends attempted after `shutdownOutput`.
        public var writesAfterShutdown = 0
    }

    public let state = Locked(State())
    /// The end the connection registers, and the end the test signals through.
    public let descriptor: Int32
    private let signalDescriptor: Int32
    /// Whether `sendFile` sends (like plain TCP's sendfile) or returns nil (like TLS: the connection
    /// then stages the file through its buffer).
    public let sendsFiles: Bool
    /// Whether the test's actions raise edges on the descriptor (see the type's doc).
    public let raisesEdges: Bool

    public init(sendsFiles: Bool = true, bytesPerWrite: Int = .max, window: Int = .max, raisesEdges: Bool = true) {
        var pair: [Int32] = [0, 0]
        let made = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair)
        precondition(made == 0, "socketpair failed: errno \(errno)")
        (descriptor, signalDescriptor) = (pair[0], pair[1])
        self.sendsFiles = sendsFiles
        self.raisesEdges = raisesEdges
        state.withLock { s in
            s.bytesPerWrite = bytesPerWrite
            s.window = window
        }
    }

    // MARK: The test's side

    /// The peer sends `bytes` (one read's worth).
    public func send(_ bytes: [UInt8]) {
        state.withLock { $0.input.append(bytes) }
        signal()
    }

    public func send(_ text: String) { send(Array(text.utf8)) }

    /// The peer half-closes: after the bytes sent, reads see the end of the stream.
    public func endInput() {
        state.withLock { $0.inputEnded = true }
        signal()
    }

    /// The peer takes `bytes` more (adds to the write window, saturating).
    public func allow(_ bytes: Int) {
        state.withLock { $0.window = $0.window.addingReportingOverflow(bytes).overflow ? .max : $0.window + bytes }
        signal()
    }

    /// The peer resets the connection: writes fail from now on, reads see the end of the stream.
    public func reset() {
        state.withLock { s in
            s.writesFail = true
            s.inputEnded = true
        }
        signal()
    }

    /// Everything the connection wrote so far.
    public var output: [UInt8] { state.withLock { $0.output } }

    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Waits until `condition` holds for the state (checked every millisecond, at most `seconds`);
    /// returns whether it did. A bound for a failing test, not a timing assertion.
    @discardableResult
    public func wait(seconds: Double = 10, until condition: (State) -> Bool) -> Bool {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
        while true {
            if state.withLock({ condition($0) }) { return true }
            if DispatchTime.now().uptimeNanoseconds > deadline { return false }
            usleep(1000)
        }
    }

    /// Waits until the connection wrote `count` bytes or more; returns what it wrote.
    public func waitForOutput(count: Int, seconds: Double = 10) -> [UInt8] {
        wait(seconds: seconds) { $0.output.count >= count }
        return output
    }

    /// Raises an edge on the descriptor (readable and writable), unless edges are the caller's.
    private func signal() {
        guard raisesEdges else { return }
        var one: UInt8 = 1
        _ = Glibc.send(signalDescriptor, &one, 1, Int32(MSG_NOSIGNAL))
    }

    // MARK: The connection's side (ByteTransport)

    public func read(into buffer: UnsafeMutableRawBufferPointer) -> TransportResult {
        state.withLock { s in
            if s.closed { s.usesAfterClose += 1; return .failed(EBADF) }
            guard !s.input.isEmpty else {
                if s.inputEnded { return .endOfStream }
                var drain = [UInt8](repeating: 0, count: 256)
                while recv(descriptor, &drain, drain.count, Int32(MSG_DONTWAIT)) > 0 {}
                return .wouldBlock
            }
            let n = min(buffer.count, s.input[0].count)
            s.input[0].withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: n) }
            if n == s.input[0].count { s.input.removeFirst() } else { s.input[0].removeFirst(n) }
            return .bytes(n)
        }
    }

    public func write(_ bytes: UnsafeRawBufferPointer, more: Bool) -> TransportResult {
        state.withLock { s in
            if s.closed { s.usesAfterClose += 1; return .failed(EBADF) }
            if s.outputShutDown { s.writesAfterShutdown += 1 }
            if s.writesFail || s.outputShutDown { return .failed(EPIPE) }
            let n = min(bytes.count, s.bytesPerWrite, s.window)
            guard n > 0 else { s.blockedWrites += 1; return .wouldBlock }
            s.output.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[..<n]))
            s.window -= n
            s.writes += 1
            return .bytes(n)
        }
    }

    public func sendFile(_ file: Int32, offset: Int64, count: Int) -> TransportResult? {
        guard sendsFiles else { return nil }
        return state.withLock { s in
            if s.closed { s.usesAfterClose += 1; return .failed(EBADF) }
            if s.outputShutDown { s.writesAfterShutdown += 1 }
            if s.writesFail || s.outputShutDown { return .failed(EPIPE) }
            let n = min(count, s.bytesPerWrite, s.window)
            guard n > 0 else { s.blockedWrites += 1; return .wouldBlock }
            var chunk = [UInt8](repeating: 0, count: n)
            let got = chunk.withUnsafeMutableBytes { pread(file, $0.baseAddress!, n, off_t(offset)) }
            guard got > 0 else { return .failed(EIO) }
            s.output.append(contentsOf: chunk[..<got])
            s.window -= got
            s.writes += 1
            return .bytes(got)
        }
    }

    public func shutdownOutput() { state.withLock { $0.outputShutDown = true } }

    public func close() {
        let first = state.withLock { s in
            defer { s.closed = true }
            return !s.closed
        }
        if first {
            _ = Glibc.close(descriptor)
            _ = Glibc.close(signalDescriptor)
        }
    }
}
