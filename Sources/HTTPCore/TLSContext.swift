import COpenSSL

/// Why a `TLSContext` could not be built (unreadable or mismatched certificate/key, ...).
public struct TLSContextError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ what: String) {
        description = what + TLSContext.drainErrors()
    }
}

/// An OpenSSL server context built from a `TLSConfiguration`: TLS 1.2 and 1.3 only (1.3 preferred
/// by OpenSSL's version negotiation), AEAD-only ECDHE cipher suites for 1.2, ALPN `http/1.1`,
/// session cache and tickets, and one sub-context per SNI name.
///
/// Lifetime: immutable once built. Every `TLSServerTransport` keeps a strong reference to the context it
/// was created from (the SNI callback reaches `self` through an unretained pointer), and OpenSSL
/// reference-counts the `SSL_CTX`s, so replacing a context (reload) never disturbs connections that
/// still use the old one. Thread-safety: OpenSSL contexts may be shared by any number of threads
/// once configured; nothing here mutates after `init`, hence `@unchecked Sendable`.
public final class TLSContext: @unchecked Sendable {
    /// The context new connections start with; holds the default certificate and the SNI callback.
    let defaultContext: OpaquePointer
    /// Lower-cased server name → context holding that name's certificate.
    private let sniContexts: [String: OpaquePointer]
    public let configuration: TLSConfiguration

    /// TLS 1.2 suites (TLS 1.3 suites are OpenSSL's defaults, all AEAD): forward secret and AEAD only.
    static let tls12Ciphers = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

    /// Reads the PEM files named in `configuration` and builds the contexts; throws
    /// `TLSContextError` naming the file that failed.
    public init(configuration: TLSConfiguration) throws {
        self.configuration = configuration
        let main = try TLSContext.makeContext(configuration.defaultCertificate, configuration: configuration)
        var sni: [String: OpaquePointer] = [:]
        do {
            for (name, certificate) in configuration.sni {
                sni[name.lowercased()] = try TLSContext.makeContext(certificate, configuration: configuration)
            }
        } catch {
            SSL_CTX_free(main)
            for ctx in sni.values { SSL_CTX_free(ctx) }
            throw error
        }
        defaultContext = main
        sniContexts = sni
        if !sni.isEmpty {
            _ = dcserve_SSL_CTX_set_tlsext_servername_callback(main, tlsServerNameCallback)
            _ = dcserve_SSL_CTX_set_tlsext_servername_arg(main, Unmanaged.passUnretained(self).toOpaque())
        }
    }

    deinit {
        SSL_CTX_free(defaultContext)
        for ctx in sniContexts.values { SSL_CTX_free(ctx) }
    }

    /// The context for a ClientHello's server name, or nil to keep the default.
    func context(forServerName name: String) -> OpaquePointer? { sniContexts[name.lowercased()] }

    private static func makeContext(_ certificate: TLSConfiguration.Certificate, configuration: TLSConfiguration) throws -> OpaquePointer {
        drainErrors()
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw TLSContextError("cannot create an OpenSSL context") }
        do {
            guard dcserve_SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1,
                  dcserve_SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) == 1 else {
                throw TLSContextError("cannot restrict protocol versions to TLS 1.2–1.3")
            }
            _ = SSL_CTX_set_options(ctx, dcserve_SSL_OP_server_defaults())
            guard SSL_CTX_set_cipher_list(ctx, tls12Ciphers) == 1 else { throw TLSContextError("cipher list rejected") }
            // Partial writes let the connection keep its own output buffer; release idle buffers.
            _ = dcserve_SSL_CTX_set_mode(ctx, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS))
            // Read as much as the socket has into OpenSSL's buffer: one read(2) per request instead of
            // one for each record's header and one for its body. TLSServerTransport reads until it would
            // block, so nothing is left in that buffer unnoticed.
            _ = dcserve_SSL_CTX_set_read_ahead(ctx, 1)
            guard SSL_CTX_use_certificate_chain_file(ctx, certificate.chainFile) == 1 else {
                throw TLSContextError("cannot load certificate chain \(certificate.chainFile)")
            }
            guard SSL_CTX_use_PrivateKey_file(ctx, certificate.keyFile, SSL_FILETYPE_PEM) == 1 else {
                throw TLSContextError("cannot use private key \(certificate.keyFile) with certificate \(certificate.chainFile)")
            }
            guard SSL_CTX_check_private_key(ctx) == 1 else {
                throw TLSContextError("private key \(certificate.keyFile) does not match certificate \(certificate.chainFile)")
            }
            // Session resumption: server-side cache (TLS 1.2 session ids) plus tickets (on by default).
            let sessionID: [UInt8] = Array("dcserve".utf8)
            _ = sessionID.withUnsafeBufferPointer { SSL_CTX_set_session_id_context(ctx, $0.baseAddress, UInt32($0.count)) }
            _ = dcserve_SSL_CTX_set_session_cache_mode(ctx, Int(SSL_SESS_CACHE_SERVER))
            _ = dcserve_SSL_CTX_sess_set_cache_size(ctx, configuration.sessionCacheSize)
            SSL_CTX_set_alpn_select_cb(ctx, tlsALPNCallback, nil)
        } catch {
            SSL_CTX_free(ctx)
            throw error
        }
        return ctx
    }

    /// Empties OpenSSL's thread-local error queue; returns its messages as "(msg; msg)" or "".
    @discardableResult
    public static func drainErrors() -> String {
        var messages: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            let text = buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }
            messages.append(String(decoding: text, as: UTF8.self))
        }
        return messages.isEmpty ? "" : " (\(messages.joined(separator: "; ")))"
    }
}

/// ALPN: pick `http/1.1` when the client offers it; otherwise continue without ALPN (a client that
/// offers only `h2` then fails at the HTTP layer with a clear error rather than a handshake alert).
private let tlsALPNCallback: @convention(c) (
    OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?,
    UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?
) -> Int32 = { _, out, outLength, input, inputLength, _ in
    guard let input, let out, let outLength else { return dcserve_SSL_TLSEXT_ERR_NOACK() }
    let wanted: [UInt8] = Array("http/1.1".utf8)
    var i = 0
    let count = Int(inputLength)
    while i < count {
        let length = Int(input[i])
        let start = i + 1
        guard start + length <= count else { break }
        if length == wanted.count && (0..<length).allSatisfy({ input[start + $0] == wanted[$0] }) {
            out.pointee = input + start
            outLength.pointee = UInt8(length)
            return dcserve_SSL_TLSEXT_ERR_OK()
        }
        i = start + length
    }
    return dcserve_SSL_TLSEXT_ERR_NOACK()
}

/// SNI: switch the connection to the named certificate's context when there is one.
private let tlsServerNameCallback: @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?, UnsafeMutableRawPointer?) -> Int32 = { ssl, _, arg in
    guard let ssl, let arg, let name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name) else { return dcserve_SSL_TLSEXT_ERR_OK() }
    let context = Unmanaged<TLSContext>.fromOpaque(arg).takeUnretainedValue()
    if let ctx = context.context(forServerName: String(cString: name)) {
        _ = SSL_set_SSL_CTX(ssl, ctx)
    }
    return dcserve_SSL_TLSEXT_ERR_OK()
}
