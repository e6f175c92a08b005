#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Plain TCP over a non-blocking socket descriptor.
///
/// Ownership: owns the descriptor from `init` on; `close()` closes it. Thread-safety: used from its
/// owner's serial queue only (see `ByteTransport`).
public final class PlainTCPTransport: ByteTransport {
    public let descriptor: Int32

    public init(descriptor: Int32) { self.descriptor = descriptor }

    /// A short read of a stream socket means it was drained at that moment.
    public func inputDrained(afterReading count: Int, of requested: Int) -> Bool { count < requested }

    public func read(into buffer: UnsafeMutableRawBufferPointer) -> TransportResult {
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

    public func write(_ bytes: UnsafeRawBufferPointer, more: Bool) -> TransportResult {
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

    public func sendFile(_ file: Int32, offset: Int64, count: Int) -> TransportResult? {
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

    public func shutdownOutput() { _ = shutdown(descriptor, Int32(SHUT_WR)) }

    public func close() { _ = Glibc.close(descriptor) }
}
