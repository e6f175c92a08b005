#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Outcome of a non-blocking transport operation.
public enum TransportResult: Equatable, Sendable {
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
/// (`TLSServerTransport` / `TLSClientTransport`, OpenSSL over the same non-blocking descriptor).
///
/// Contract: all calls are made from the owning connection's serial queue only, so implementations
/// need no locking. A TLS implementation may need to read when asked to write and vice versa; it
/// reports `.wouldBlock` and the connection waits on both directions' readiness as it already does.
public protocol ByteTransport: AnyObject {
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

    /// Half-close: no more bytes will be written (plain TCP: `shutdown(SHUT_WR)`, TLS: close_notify
    /// then `shutdown(SHUT_WR)`), while reading goes on. Best effort, never blocks.
    func shutdownOutput()

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
    /// Set when the last `write` returned `.wouldBlock` because the transport must read first (TLS
    /// client handshake): wait for readability, then write again.
    var writeNeedsReadable: Bool { get }
    /// True when, after a `read` that returned `count` of `requested` bytes, no input can be waiting
    /// (the descriptor is drained and the transport holds nothing back), so the connection can wait
    /// for the next readiness edge instead of reading until `.wouldBlock`. False when unsure.
    func inputDrained(afterReading count: Int, of requested: Int) -> Bool
}

extension ByteTransport {
    public var isSecure: Bool { false }
    public var isEstablished: Bool { true }
    public var handshakeTimeout: Duration { .zero }
    public var readNeedsWritable: Bool { false }
    public var writeNeedsReadable: Bool { false }
    public func inputDrained(afterReading count: Int, of requested: Int) -> Bool { false }
}


