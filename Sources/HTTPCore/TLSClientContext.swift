import COpenSSL

/// An OpenSSL client context built from a `TLSClientConfiguration`: TLS 1.2 and 1.3, the trust
/// store (a CA file or the system's), peer verification, ALPN `http/1.1`.
///
/// Lifetime: immutable once built; every `TLSClientTransport` keeps a strong reference to its
/// context (OpenSSL reference-counts the `SSL_CTX` too). Thread-safety: an OpenSSL context may be
/// shared by any number of threads once configured; nothing mutates after `init`, hence
/// `@unchecked Sendable`.
public final class TLSClientContext: @unchecked Sendable {
    let context: OpaquePointer
    public let configuration: TLSClientConfiguration

    /// Throws `TLSContextError` naming the CA file that did not load.
    public init(configuration: TLSClientConfiguration) throws {
        self.configuration = configuration
        TLSContext.drainErrors()
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw TLSContextError("cannot create an OpenSSL client context") }
        do {
            guard dcserve_SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1,
                  dcserve_SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) == 1 else {
                throw TLSContextError("cannot restrict protocol versions to TLS 1.2–1.3")
            }
            _ = SSL_CTX_set_options(ctx, dcserve_SSL_OP_client_defaults())
            _ = dcserve_SSL_CTX_set_mode(ctx, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS))
            if let caFile = configuration.caFile {
                guard SSL_CTX_load_verify_file(ctx, caFile) == 1 else {
                    throw TLSContextError("cannot load CA certificates from \(caFile)")
                }
            } else {
                guard SSL_CTX_set_default_verify_paths(ctx) == 1 else {
                    throw TLSContextError("cannot load the system's CA certificates")
                }
            }
            SSL_CTX_set_verify(ctx, configuration.verifyPeer ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nil)
            let alpn: [UInt8] = [8] + Array("http/1.1".utf8)
            _ = alpn.withUnsafeBufferPointer { SSL_CTX_set_alpn_protos(ctx, $0.baseAddress, UInt32($0.count)) }
        } catch {
            SSL_CTX_free(ctx)
            throw error
        }
        context = ctx
    }

    deinit { SSL_CTX_free(context) }
}
