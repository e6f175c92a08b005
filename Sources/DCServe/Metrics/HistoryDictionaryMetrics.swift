import CoreMetrics

/// Metrics of history dictionaries, per rule:
///
/// | metric | labels | meaning |
/// |---|---|---|
/// | `dcserve_history_dictionaries_built_total` | rule | dictionaries built (a rebuild giving the same bytes counts too) |
/// | `dcserve_history_builds_skipped_total` | rule, reason | `budget` (build time per minute used up), `failed` (store) |
/// | `dcserve_history_offered_total` | rule | responses that carried `Link` to a history dictionary |
/// | `dcserve_history_fetched_total` | rule | dictionary URL answered 200 |
/// | `dcserve_history_refused_total` | rule | dictionary URL or `Available-Dictionary` refused (other partition/group, expired) |
/// | `dcserve_history_used_total` | rule, coding | responses coded (dcb/dcz) against a history dictionary |
/// | `dcserve_history_identity_bytes_total` | rule | identity size of those responses |
/// | `dcserve_history_sent_bytes_total` | rule | bytes sent for them (saved = identity − sent) |
/// | `dcserve_history_groups_evicted_total` | rule | windows dropped beyond `history.maxGroups` |
/// | `dcserve_history_groups_over_capacity_total` | rule | of those, windows active within the last minute (more groups active than `maxGroups`) |
/// | `dcserve_history_window_bodies_dropped_total` | rule, reason | bodies never added to a window shared through the store: `backlog` (more waiting than ``HistoryDictionaryBuilder/maxPendingBytes``), `failed` (store) |
///
/// Thread-safe: handles are created once per label set (swift-metrics hands out shared counters).
public final class HistoryDictionaryMetrics: Sendable {
    private let counters = LabelledCache<String, Counter>()

    public init() {}

    private func count(_ label: String, _ dimensions: [(String, String)], by amount: Int = 1) {
        let key = ([label] + dimensions.map { "\($0.0)=\($0.1)" }).joined(separator: "\u{0}")
        counters.get(key) { Counter(label: label, dimensions: dimensions) }.increment(by: amount)
    }

    func built(rule: String) { count("dcserve_history_dictionaries_built_total", [("rule", rule)]) }
    func skipped(rule: String, reason: String) { count("dcserve_history_builds_skipped_total", [("rule", rule), ("reason", reason)]) }
    func offered(rule: String) { count("dcserve_history_offered_total", [("rule", rule)]) }
    func fetched(rule: String) { count("dcserve_history_fetched_total", [("rule", rule)]) }
    func refused(rule: String) { count("dcserve_history_refused_total", [("rule", rule)]) }
    func evicted(rule: String) { count("dcserve_history_groups_evicted_total", [("rule", rule)]) }
    func overCapacity(rule: String) { count("dcserve_history_groups_over_capacity_total", [("rule", rule)]) }
    func windowBodiesDropped(rule: String, reason: String, count n: Int) {
        count("dcserve_history_window_bodies_dropped_total", [("rule", rule), ("reason", reason)], by: n)
    }

    func used(rule: String, coding: String, identity: Int, sent: Int) {
        count("dcserve_history_used_total", [("rule", rule), ("coding", coding)])
        count("dcserve_history_identity_bytes_total", [("rule", rule)], by: identity)
        count("dcserve_history_sent_bytes_total", [("rule", rule)], by: sent)
    }
}
