import CoreMetrics

/// The A/B switch's metrics, per group (`control`, `dictionary`, `unkeyed`: dictionary transport for
/// a request without a client id) and rule (the dictionary rule that covers the path, `-` for none):
///
/// | metric | meaning |
/// |---|---|
/// | `dcserve_experiment_responses_total` | responses |
/// | `dcserve_experiment_sent_bytes_total` | body bytes sent (content-coded) |
/// | `dcserve_experiment_identity_bytes_total` | the same responses' bodies without content coding |
/// | `dcserve_experiment_time_to_last_byte_seconds` | histogram: request parsed → last byte queued for sending |
///
/// Responses and bytes are counted when the response is handed to the server (as
/// `dcserve_http_requests_total` is), so the groups add up to that total; the time to last byte when
/// the last byte is queued. Thread-safe: handles are created once per label set under a lock.
public final class ExperimentMetrics: Sendable {
    private struct Labels: Hashable, Sendable {
        let group: ExperimentGroup
        let rule: String
    }
    private struct Handles: Sendable {
        let responses: Counter
        let sentBytes: Counter
        let identityBytes: Counter
        let timeToLastByte: Timer
    }
    private let handles = LabelledCache<Labels, Handles>()
    private let factory: any MetricsFactory

    /// `factory`: where the metrics go (the process's bootstrapped factory by default).
    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
    }

    private func handles(_ group: ExperimentGroup, _ rule: String?) -> Handles {
        let labels = Labels(group: group, rule: rule ?? "-")
        return handles.get(labels) {
            let dimensions = [("group", labels.group.rawValue), ("rule", labels.rule)]
            return Handles(
                responses: Counter(label: "dcserve_experiment_responses_total", dimensions: dimensions, factory: factory),
                sentBytes: Counter(label: "dcserve_experiment_sent_bytes_total", dimensions: dimensions, factory: factory),
                identityBytes: Counter(label: "dcserve_experiment_identity_bytes_total", dimensions: dimensions, factory: factory),
                timeToLastByte: Timer(label: "dcserve_experiment_time_to_last_byte_seconds", dimensions: dimensions, factory: factory))
        }
    }

    /// One response handed to the server.
    public func responded(group: ExperimentGroup, rule: String?, sentBytes: Int64, identityBytes: Int64) {
        let h = handles(group, rule)
        h.responses.increment()
        h.sentBytes.increment(by: sentBytes)
        h.identityBytes.increment(by: identityBytes)
    }

    /// One response's last byte queued, `nanoseconds` after its request was parsed.
    public func completed(group: ExperimentGroup, rule: String?, nanoseconds: UInt64) {
        handles(group, rule).timeToLastByte.recordNanoseconds(Int64(clamping: nanoseconds))
    }
}
