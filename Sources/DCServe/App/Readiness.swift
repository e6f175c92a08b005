import Foundation
import Locking

/// Whether dcserve is ready for traffic: its listeners are open and its dictionary store directory is
/// readable and writable. Thread-safe (`Locked`); `problem()` is cheap enough for frequent probes.
public final class Readiness: Sendable {
    public let storePath: String
    private let open = Locked(false)
    private let degradationCheck: (@Sendable () -> String?)?

    /// - Parameter degradation: says why the instance is degraded (still serving, with less), or nil
    ///   when it is not (e.g. the shared dictionary store is unreachable).
    public init(storePath: String, degradation: (@Sendable () -> String?)? = nil) {
        self.storePath = storePath
        self.degradationCheck = degradation
    }

    /// Why the instance is degraded (ready, but e.g. serving from its local dictionary cache only), or nil.
    public func degradation() -> String? { degradationCheck?() }

    /// Set true once every listener is bound, false when shutdown begins.
    public func setListenersOpen(_ value: Bool) { open.withLock { $0 = value } }

    /// Whether the dictionary store is degraded: its directory not readable and writable, or a
    /// degradation reported (e.g. the shared store unreachable). Read at every metrics scrape.
    public var storeIsDegraded: Bool {
        access(storePath, R_OK | W_OK | X_OK) != 0 || degradation() != nil
    }

    /// nil when ready, else the reason it is not.
    public func problem() -> String? {
        guard open.withLock({ $0 }) else { return "listeners are not open" }
        guard access(storePath, R_OK | W_OK | X_OK) == 0 else {
            return "dictionary store \(storePath) is not readable and writable"
        }
        return nil
    }
}
