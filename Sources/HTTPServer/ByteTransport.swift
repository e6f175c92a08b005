#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Outcome of a non-blocking transport operation.
enum TransportResult: Equatable {
    /// This many bytes were transferred (> 0).
    case bytes(Int)
    /// Nothing can be done now; wait for the descriptor to become readable/writable.
    case wouldBlock
    /// The peer closed its side (reads only).
    case endOfStream
    /// The connection failed (reset, broken pipe, ...): close it.
    case failed(Int32)
}

/// The byte stream under one HTTP connection: plain TCP (`PlainTCPTransport`) or TLS
/// (`TLSTransport`, OpenSSL over the same non-blocking descriptor).
///
/// Contract: all calls are made from the owning connection's serial queue only, so implementations
/// need no locking. A TLS implementation may need to read when asked to write and vice versa; it
/// reports `.wouldBlock` and the connection waits on both directions' readiness as it already does.
protocol ByteTransport: AnyObject {
    var descriptor: Int32 { get }
    func read(into buffer: UnsafeMutableRawBufferPointer) -> TransportResult
    /// `more`: further bytes (a file body) follow at once; the transport may hold back a partial
    /// segment (MSG_MORE) so head and body share packets.
    func write(_ bytes: UnsafeRawBufferPointer, more: Bool) -> TransportResult
    /// Sends `count` bytes of `file` starting at `offset` without copying them through user space,
    /// when the transport can (plain TCP: sendfile). Returns nil when it cannot (TLS): the caller then
    /// reads and writes.
    func sendFile(_ file: Int32, offset: Int64, count: Int) -> TransportResult?
    /// Closes the descriptor. Called once, after the connection left its event loop.
    func close()

    // TLS only (defaults below are plain TCP's):
    /// True when requests on this transport arrived encrypted (their scheme is https).
    var isSecure: Bool { get }
    /// False until the handshake completed; the connection then applies `handshakeTimeout`
    /// instead of the idle timeout and closes silently when it expires.
    var isEstablished: Bool { get }
    var handshakeTimeout: Duration { get }
    /// Set when the last `read` returned `.wouldBlock` because the transport must write first (TLS
    /// handshake): wait for writability, then read again.
    var readNeedsWritable: Bool { get }
    /// True when, after a `read` that returned `count` of `requested` bytes, no input can be waiting
    /// (the descriptor is drained and the transport holds nothing back), so the connection can wait
    /// for the next readiness edge instead of reading until `.wouldBlock`. False when unsure.
    func inputDrained(afterReading count: Int, of requested: Int) -> Bool
}

extension ByteTransport {
    var isSecure: Bool { false }
    var isEstablished: Bool { true }
    var handshakeTimeout: Duration { .zero }
    var readNeedsWritable: Bool { false }
    func inputDrained(afterReading count: Int, of requested: Int) -> Bool { false }
}

/// Plain TCP over a non-blocking socket descriptor.
final class PlainTCPTransport: ByteTransport {
    let descriptor: Int32

    init(descriptor: Int32) { self.descriptor = descriptor }

    /// A short read of a stream socket means it was drained at that moment.
    func inputDrained(afterReading count: Int, of requested: Int) -> Bool { count < requested }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> TransportResult {
        while true {
            let n = Glibc.read(descriptor, buffer.baseAddress, buffer.count)
            if n > 0 { return .bytes(n) }
            if n == 0 { return .endOfStream }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            default: return .failed(errno)
            }
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer, more: Bool) -> TransportResult {
        let flags = Int32(MSG_NOSIGNAL) | (more ? Int32(MSG_MORE) : 0)
        while true {
            let n = send(descriptor, bytes.baseAddress, bytes.count, flags)
            if n >= 0 { return n == 0 ? .wouldBlock : .bytes(n) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            default: return .failed(errno)
            }
        }
    }

    func sendFile(_ file: Int32, offset: Int64, count: Int) -> TransportResult? {
        var off = off_t(offset)
        while true {
            let n = sendfile(descriptor, file, &off, count)
            if n > 0 { return .bytes(n) }
            if n == 0 { return .failed(EIO) }  // file shorter than announced
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case EINVAL, ENOSYS: return nil
            default: return .failed(errno)
            }
        }
    }

    func close() { _ = Glibc.close(descriptor) }
}
