#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import COpenSSL

/// TLS (OpenSSL) over a non-blocking socket: the server side of one connection.
///
/// The handshake runs inside `read` (the client speaks first); when OpenSSL needs the socket to
/// become writable to continue it (`SSL_ERROR_WANT_WRITE`), `read` reports `.wouldBlock` with
/// `readNeedsWritable` set, and the connection retries the read once the descriptor is writable.
/// Renegotiation is disabled (`TLSContext`), so a write never has to wait for readability; a write
/// that asks for it anyway fails the connection rather than spinning. No `sendfile` under TLS.
///
/// Ownership: owns the `SSL` object and the descriptor; `close()` frees both. Keeps the
/// `TLSContext` it was created from alive. Thread-safety: like every `ByteTransport`, used only from
/// its connection's serial queue.
public final class TLSServerTransport: ByteTransport {
    public let descriptor: Int32
    private let ssl: OpaquePointer
    private let context: TLSContext
    private let counters: TLSHandshakeCounters
    private var established = false
    private var fatal = false
    private var shutdownSent = false
    public private(set) var readNeedsWritable = false
    /// Set by OpenSSL's socket-BIO callback: 1 when its latest read left the socket drained. Owned
    /// here, freed in `close()` after the `SSL` object that writes to it.
    private let socketDrained: UnsafeMutablePointer<UInt8>

    /// Nil when OpenSSL cannot make a connection object (out of memory); the caller closes `descriptor`.
    public init?(descriptor: Int32, context: TLSContext, counters: TLSHandshakeCounters) {
        guard let ssl = SSL_new(context.defaultContext) else { return nil }
        guard SSL_set_fd(ssl, descriptor) == 1 else { SSL_free(ssl); return nil }
        SSL_set_accept_state(ssl)
        socketDrained = .allocate(capacity: 1)
        socketDrained.initialize(to: 0)
        dcserve_SSL_observe_socket_reads(ssl, socketDrained)
        self.ssl = ssl
        self.descriptor = descriptor
        self.context = context
        self.counters = counters
    }

    public var isSecure: Bool { true }

    /// Drained when OpenSSL holds no input (no buffered record, no decrypted bytes) and its latest
    /// socket read came back short: then the next bytes raise a new readiness edge.
    public func inputDrained(afterReading count: Int, of requested: Int) -> Bool {
        socketDrained.pointee == 1 && SSL_has_pending(ssl) == 0
    }
    public var isEstablished: Bool { established }
    public var handshakeTimeout: Duration { context.configuration.handshakeTimeout }

    public func read(into buffer: UnsafeMutableRawBufferPointer) -> TransportResult {
        readNeedsWritable = false
        if !established {
            ERR_clear_error()
            let r = SSL_do_handshake(ssl)
            if r != 1 {
                let result = failure(r)
                if case .wouldBlock = result { return result }
                counters.recordFailure()
                return result
            }
            established = true
            counters.recordHandshake(resumed: dcserve_SSL_session_reused(ssl) == 1)
        }
        // Drain every decrypted byte OpenSSL holds (up to the buffer's size), so none is stranded in
        // its buffer while the socket itself is not readable.
        var total = 0
        while total < buffer.count {
            var n = 0
            ERR_clear_error()
            let r = SSL_read_ex(ssl, buffer.baseAddress! + total, buffer.count - total, &n)
            if r == 1 {
                total += n
                if SSL_pending(ssl) == 0 { break }
                continue
            }
            let result = failure(r)
            if total > 0, case .wouldBlock = result { break }
            return total > 0 ? .bytes(total) : result
        }
        return .bytes(total)
    }

    /// `more` is ignored: file bodies are staged through the connection's buffer under TLS, so the
    /// next bytes follow in the same or the next record anyway.
    public func write(_ bytes: UnsafeRawBufferPointer, more: Bool) -> TransportResult {
        guard bytes.count > 0 else { return .wouldBlock }
        var n = 0
        ERR_clear_error()
        let r = SSL_write_ex(ssl, bytes.baseAddress, bytes.count, &n)
        if r == 1 { return .bytes(n) }
        switch SSL_get_error(ssl, r) {
        case SSL_ERROR_WANT_WRITE:
            return .wouldBlock
        case SSL_ERROR_WANT_READ:
            // Only a renegotiation could make a write wait for a read, and that is disabled.
            fatal = true
            ERR_clear_error()
            return .failed(EPROTO)
        default:
            return failure(r)
        }
    }

    public func sendFile(_ file: Int32, offset: Int64, count: Int) -> TransportResult? { nil }

    /// Sends close_notify (best effort) and shuts the socket's sending side; reading goes on.
    public func shutdownOutput() {
        if established && !fatal {
            ERR_clear_error()
            _ = SSL_shutdown(ssl)
            ERR_clear_error()
            shutdownSent = true
        }
        _ = shutdown(descriptor, Int32(SHUT_WR))
    }

    /// Sends close_notify when the session is healthy (best effort, never waits), then frees the
    /// `SSL` object and closes the descriptor.
    public func close() {
        if established && !fatal && !shutdownSent {
            ERR_clear_error()
            _ = SSL_shutdown(ssl)
        }
        SSL_free(ssl)
        socketDrained.deallocate()
        ERR_clear_error()
        _ = Glibc.close(descriptor)
    }

    /// Maps a failed OpenSSL call to a transport result; sets `readNeedsWritable` for WANT_WRITE.
    private func failure(_ r: Int32) -> TransportResult {
        let error = SSL_get_error(ssl, r)
        switch error {
        case SSL_ERROR_WANT_READ:
            return .wouldBlock
        case SSL_ERROR_WANT_WRITE:
            readNeedsWritable = true
            return .wouldBlock
        case SSL_ERROR_ZERO_RETURN:
            return .endOfStream  // close_notify received
        case SSL_ERROR_SYSCALL:
            fatal = true
            let code = errno
            ERR_clear_error()
            return .failed(code == 0 ? ECONNRESET : code)
        default:
            // Protocol error (garbage, unsupported version, unexpected EOF...): drop the connection.
            fatal = true
            ERR_clear_error()
            return .failed(EPROTO)
        }
    }
}
