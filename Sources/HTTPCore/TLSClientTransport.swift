#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import COpenSSL

/// TLS (OpenSSL) over a non-blocking, connected socket: the client side of one upstream connection.
///
/// The handshake (`SSL_connect`) runs inside the first `write` or `read`, whichever comes first
/// (the client speaks first, so usually the request's first write). While it needs the socket to
/// become readable, `write` reports `.wouldBlock` with `writeNeedsReadable` set; while it needs
/// writability, `read` reports `.wouldBlock` with `readNeedsWritable` set. The caller waits for that
/// readiness and retries. SNI carries `serverName` unless it is an IP literal; with
/// `verifyPeer` the certificate must chain to the configured trust store and name `serverName`
/// (DNS name, or IP address for a literal). A failed handshake is `.failed(EPROTO)` with the reason
/// in `failureReason` (e.g. the verification error). No `sendfile` under TLS.
///
/// Ownership: owns the `SSL` object and the descriptor; `close()` frees both. Keeps its
/// `TLSClientContext` alive. Thread-safety: used from its owner's serial queue only.
public final class TLSClientTransport: ByteTransport {
    public let descriptor: Int32
    private let ssl: OpaquePointer
    private let context: TLSClientContext
    private var established = false
    private var fatal = false
    private var shutdownSent = false
    public private(set) var readNeedsWritable = false
    public private(set) var writeNeedsReadable = false
    /// Why the transport failed (handshake or protocol error), for logs and error messages.
    public private(set) var failureReason: String?

    /// `serverName`: the host the connection is for (as configured, without port). Nil when OpenSSL
    /// cannot make a connection object or refuses the name; the caller closes `descriptor`.
    public init?(descriptor: Int32, context: TLSClientContext, serverName: String) {
        guard let ssl = SSL_new(context.context) else { return nil }
        guard SSL_set_fd(ssl, descriptor) == 1 else { SSL_free(ssl); return nil }
        SSL_set_connect_state(ssl)
        let name = serverName.hasPrefix("[") && serverName.hasSuffix("]") ? String(serverName.dropFirst().dropLast()) : serverName
        let literal = Socket.isAddressLiteral(name)
        if !literal && !name.isEmpty {
            guard dcserve_SSL_set_tlsext_host_name(ssl, name) == 1 else { SSL_free(ssl); TLSContext.drainErrors(); return nil }
        }
        if context.configuration.verifyPeer {
            let ok: Bool
            if literal {
                ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) == 1
            } else {
                SSL_set_hostflags(ssl, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
                ok = SSL_set1_host(ssl, name) == 1
            }
            guard ok else { SSL_free(ssl); TLSContext.drainErrors(); return nil }
        }
        self.ssl = ssl
        self.descriptor = descriptor
        self.context = context
    }

    public var isSecure: Bool { true }
    public var isEstablished: Bool { established }
    public var handshakeTimeout: Duration { context.configuration.handshakeTimeout }

    /// The ALPN protocol the server chose ("http/1.1"), or nil when it chose none.
    public var negotiatedProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// Advances the handshake; nil once established, else the result to report.
    private func handshake(forWrite: Bool) -> TransportResult? {
        guard !established else { return nil }
        guard !fatal else { return .failed(EPROTO) }
        ERR_clear_error()
        let r = SSL_do_handshake(ssl)
        if r == 1 {
            established = true
            return nil
        }
        switch SSL_get_error(ssl, r) {
        case SSL_ERROR_WANT_READ:
            if forWrite { writeNeedsReadable = true }
            return .wouldBlock
        case SSL_ERROR_WANT_WRITE:
            if !forWrite { readNeedsWritable = true }
            return .wouldBlock
        default:
            fatal = true
            let verify = SSL_get_verify_result(ssl)
            if verify != X509_V_OK {
                failureReason = "certificate verification failed: " + String(cString: X509_verify_cert_error_string(verify))
            } else {
                let code = errno
                let detail = TLSContext.drainErrors()
                failureReason = "TLS handshake failed" + (detail.isEmpty ? (code != 0 ? ": \(String(cString: strerror(code)))" : "") : detail)
            }
            ERR_clear_error()
            return .failed(EPROTO)
        }
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) -> TransportResult {
        readNeedsWritable = false
        if let r = handshake(forWrite: false) { return r }
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

    public func write(_ bytes: UnsafeRawBufferPointer, more: Bool) -> TransportResult {
        writeNeedsReadable = false
        if let r = handshake(forWrite: true) { return r }
        guard bytes.count > 0 else { return .wouldBlock }
        var n = 0
        ERR_clear_error()
        let r = SSL_write_ex(ssl, bytes.baseAddress, bytes.count, &n)
        if r == 1 { return .bytes(n) }
        switch SSL_get_error(ssl, r) {
        case SSL_ERROR_WANT_WRITE:
            return .wouldBlock
        case SSL_ERROR_WANT_READ:
            writeNeedsReadable = true
            return .wouldBlock
        default:
            return failure(r)
        }
    }

    public func sendFile(_ file: Int32, offset: Int64, count: Int) -> TransportResult? { nil }

    public func shutdownOutput() {
        if established && !fatal && !shutdownSent {
            ERR_clear_error()
            _ = SSL_shutdown(ssl)
            ERR_clear_error()
            shutdownSent = true
        }
        _ = shutdown(descriptor, Int32(SHUT_WR))
    }

    public func close() {
        if established && !fatal && !shutdownSent {
            ERR_clear_error()
            _ = SSL_shutdown(ssl)
        }
        SSL_free(ssl)
        ERR_clear_error()
        _ = Glibc.close(descriptor)
    }

    private func failure(_ r: Int32) -> TransportResult {
        switch SSL_get_error(ssl, r) {
        case SSL_ERROR_WANT_READ:
            return .wouldBlock
        case SSL_ERROR_WANT_WRITE:
            readNeedsWritable = true
            return .wouldBlock
        case SSL_ERROR_ZERO_RETURN:
            return .endOfStream
        case SSL_ERROR_SYSCALL:
            fatal = true
            let code = errno
            ERR_clear_error()
            // An EOF without close_notify: the peer closed; report it as end of stream with errno 0.
            if code == 0 { failureReason = "connection closed without close_notify"; return .endOfStream }
            failureReason = String(cString: strerror(code))
            return .failed(code)
        default:
            fatal = true
            failureReason = "TLS protocol error" + TLSContext.drainErrors()
            ERR_clear_error()
            return .failed(EPROTO)
        }
    }
}
