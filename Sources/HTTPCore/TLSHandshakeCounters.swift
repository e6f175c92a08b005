import Synchronization

/// Counts TLS handshakes of one server (for metrics and tests). Thread-safety: atomics only.
public final class TLSHandshakeCounters: Sendable {
    private let completedCount = Atomic<Int>(0)
    private let resumedCount = Atomic<Int>(0)
    private let failedCount = Atomic<Int>(0)

    public init() {}

    /// Handshakes that completed (including resumed ones).
    public var completed: Int { completedCount.load(ordering: .relaxed) }
    /// Completed handshakes that resumed an earlier session (ticket or session id).
    public var resumed: Int { resumedCount.load(ordering: .relaxed) }
    /// Handshakes that failed (protocol error, garbage, reset); timeouts are not counted here.
    public var failed: Int { failedCount.load(ordering: .relaxed) }

    func recordHandshake(resumed: Bool) {
        completedCount.add(1, ordering: .relaxed)
        if resumed { resumedCount.add(1, ordering: .relaxed) }
    }

    func recordFailure() { failedCount.add(1, ordering: .relaxed) }
}
