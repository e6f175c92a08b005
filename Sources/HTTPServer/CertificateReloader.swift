import HTTPCore
import Locking

/// The TLS context new connections use, replaceable at run time (SIGHUP): `reload()` re-reads the
/// PEM files named in the configuration and, only if they load, swaps the context. Connections
/// already open keep the context (and certificate) they started with; new connections get the new one.
///
/// Thread-safety: the current context sits behind a `Locked`; `reload()` may race with accepts.
public final class CertificateReloader: Sendable {
    public let configuration: TLSConfiguration
    private let state: Locked<TLSContext>
    /// Handshake counters shared by every TLS connection of the server.
    public let counters = TLSHandshakeCounters()

    /// Loads the certificates once; throws `TLSContextError` if they do not load.
    public init(configuration: TLSConfiguration) throws {
        self.configuration = configuration
        state = Locked(try TLSContext(configuration: configuration))
    }

    /// The context for a connection accepted now.
    public var current: TLSContext { state.withLock { $0 } }

    /// Re-reads the certificate and key files. On error the old context stays in use and the error
    /// is thrown (so a botched certificate rollout never takes the server down).
    public func reload() throws {
        let fresh = try TLSContext(configuration: configuration)
        state.withLock { $0 = fresh }
    }
}
