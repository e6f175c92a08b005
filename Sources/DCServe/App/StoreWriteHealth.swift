import Foundation
import Logging
import Locking

/// Whether the dictionary store's writes currently succeed: the last write failed (the disk is full,
/// PostgreSQL is down) until one succeeds again. While failing, live responses are not advertised as
/// dictionaries (a client could never use a version the store lost), `/readyz` says degraded, and the
/// error is logged at most once a minute with the count of similar errors since.
///
/// Thread-safe (`Locked`); every call is cheap.
public final class StoreWriteHealth: Sendable {
    private struct State {
        var failingSince: Date?
        var lastError = ""
        var lastLogged: ContinuousClock.Instant?
        var suppressed = 0
        /// The store said it was unreachable at the last look: when it no longer does, failures seen
        /// meanwhile are forgotten (writes are expected to work again).
        var sawUnavailable = false
    }

    private let state = Locked(State())
    /// The shortest interval between two logged write errors.
    let logInterval: Duration
    /// Says why the store cannot take writes right now, before any write failed (the shared
    /// PostgreSQL store's connection is down); nil when it can.
    private let unavailable: (@Sendable () -> String?)?

    public init(logInterval: Duration = .seconds(60), unavailable: (@Sendable () -> String?)? = nil) {
        self.logInterval = logInterval
        self.unavailable = unavailable
    }

    /// Whether writes fail: the last one failed, or the store says it is unreachable.
    public var isFailing: Bool {
        let reason = reconcile()
        return reason != nil || state.withLock { $0.failingSince != nil }
    }

    /// The store's own unavailability, now; a reconnection clears the failures seen while it was away.
    private func reconcile() -> String? {
        guard let unavailable else { return nil }
        let reason = unavailable()
        state.withLock { s in
            if reason != nil {
                s.sawUnavailable = true
            } else if s.sawUnavailable {
                s.sawUnavailable = false
                s.failingSince = nil
                s.suppressed = 0
                s.lastLogged = nil
            }
        }
        return reason
    }

    /// Notes a failed write; logs it unless another was logged within `logInterval`.
    public func failed(_ error: String, logger: Logger, message: Logger.Message, metadata: Logger.Metadata = [:]) {
        let now = ContinuousClock.now
        let suppressed: Int? = state.withLock { s in
            if s.failingSince == nil { s.failingSince = Date() }
            s.lastError = error
            if let last = s.lastLogged, now - last < logInterval {
                s.suppressed += 1
                return nil
            }
            defer { s.suppressed = 0 }
            s.lastLogged = now
            return s.suppressed
        }
        guard let suppressed else { return }
        var metadata = metadata
        metadata["error"] = "\(error)"
        if suppressed > 0 { metadata["similar_errors_not_logged"] = "\(suppressed)" }
        logger.error(message, metadata: metadata)
    }

    /// Notes a successful write (logs once that writes work again).
    public func succeeded(logger: Logger) {
        let recovered = state.withLock { s -> Date? in
            defer { s.failingSince = nil; s.suppressed = 0; s.lastLogged = nil }
            return s.failingSince
        }
        if let recovered {
            logger.notice("dictionary store writes succeed again", metadata: [
                "failing_seconds": "\(Int(Date().timeIntervalSince(recovered)))"])
        }
    }

    /// Why `/readyz` is degraded, or nil.
    public func degradation() -> String? {
        if let reason = reconcile() { return reason }
        return state.withLock { s in
            guard let since = s.failingSince else { return nil }
            return "dictionary store writes failing for \(Int(Date().timeIntervalSince(since))) s (\(s.lastError)); new dictionaries are not advertised"
        }
    }
}
