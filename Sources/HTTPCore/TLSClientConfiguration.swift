/// How an upstream client speaks TLS: whom it trusts and how long a handshake may take. A plain
/// value; `TLSClientContext` turns it into an OpenSSL context.
public struct TLSClientConfiguration: Sendable, Equatable {
    /// PEM file of the certificate authorities to trust; nil = the system's default store
    /// (OpenSSL's default verify paths, on Debian /etc/ssl/certs).
    public var caFile: String?
    /// Verify the server's certificate chain and that it names the host (DNS name or IP address).
    /// Turn off only for tests against throwaway certificates. Default true.
    public var verifyPeer: Bool = true
    /// A handshake must finish within this long (the client enforces it). Default 10 s.
    public var handshakeTimeout: Duration = .seconds(10)

    public init(caFile: String? = nil, verifyPeer: Bool = true) {
        self.caFile = caFile
        self.verifyPeer = verifyPeer
    }
}
