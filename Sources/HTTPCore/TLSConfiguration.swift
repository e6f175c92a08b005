/// What a TLS listener needs: the certificate chain and key (PEM files), optional extra certificates
/// chosen by SNI, and the handshake timeout. A plain value; `TLSContext` turns it into an OpenSSL
/// context, reading the files each time (so a reload picks up replaced files).
public struct TLSConfiguration: Sendable, Equatable {
    /// One certificate chain with its private key.
    public struct Certificate: Sendable, Equatable {
        /// PEM file: the leaf certificate first, then intermediates.
        public var chainFile: String
        /// PEM file with the private key (unencrypted).
        public var keyFile: String
        public init(chainFile: String, keyFile: String) {
            self.chainFile = chainFile
            self.keyFile = keyFile
        }
    }

    /// The certificate sent when the client names no server or one without its own entry in `sni`.
    public var defaultCertificate: Certificate
    /// Server name (lower case, as sent in the ClientHello's server_name) → certificate.
    public var sni: [String: Certificate] = [:]
    /// A connection must finish the TLS handshake within this long, else it is closed silently.
    /// Default 10 s.
    public var handshakeTimeout: Duration = .seconds(10)
    /// Server-side session cache entries (TLS 1.2 session ids); TLS 1.3 and 1.2 session tickets are
    /// on as well. Default 20480.
    public var sessionCacheSize: Int = 20_480

    public init(certificateChainFile: String, privateKeyFile: String) {
        defaultCertificate = Certificate(chainFile: certificateChainFile, keyFile: privateKeyFile)
    }
}
