import Foundation
import Synchronization

/// Whether dcserve is ready for traffic: its listeners are open and its dictionary store directory is
/// readable and writable. Thread-safe (`Mutex`); `problem()` is cheap enough for frequent probes.
public final class Readiness: Sendable {
    public let storePath: String
    private let open = Mutex(false)

    public init(storePath: String) { self.storePath = storePath }

    /// Set true once every listener is bound, false when shutdown begins.
    public func setListenersOpen(_ value: Bool) { open.withLock { $0 = value } }

    /// nil when ready, else the reason it is not.
    public func problem() -> String? {
        guard open.withLock({ $0 }) else { return "listeners are not open" }
        guard access(storePath, R_OK | W_OK | X_OK) == 0 else {
            return "dictionary store \(storePath) is not readable and writable"
        }
        return nil
    }
}
