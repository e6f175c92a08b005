import CoreMetrics
import DictionaryCodec
import DictionaryTransport
import Locking

/// dcserve's metrics through swift-metrics (exported in Prometheus text format by the admin
/// listener when the process bootstraps `PrometheusMetricsFactory`).
///
/// | metric | labels | meaning |
/// |---|---|---|
/// | `dcserve_http_requests_total` | status, coding | responses by status and `Content-Encoding` |
/// | `dcserve_http_response_body_bytes_total` | coding | body bytes sent |
/// | `dcserve_compressible_identity_bytes_total` | | identity size of compressible responses |
/// | `dcserve_compressible_best_plain_bytes_total` | | what the best non-dictionary coding would have sent for them |
/// | `dcserve_compressible_sent_bytes_total` | | what was sent for them (saved by dictionaries = best_plain − sent) |
/// | `dcserve_dictionary_negotiations_total` | outcome | `dcz`/`dcb` (dictionary hits) or the plain reason (`unknownHash`, `gateRefused`, …) |
/// | `dcserve_variant_cache_lookups_total` | result | `hit` / `miss` |
/// | `dcserve_compression_duration_seconds` | coding, level | histogram of encode times (request path and background) |
/// | `dcserve_dictionaries_stored_total` | | dictionaries stored for the first time by this process |
/// | `dcserve_live_events_total` | rule, event | live rules: `response`, `dictionaryHit`, `partitionMismatch`, `pastRetention` |
/// | `dcserve_decisions_total` | rule, decision, reason | every response through the compression step: `decision` = `delta` / `plain` / `not-acceptable`, `reason` = `hit` or a ``DecisionReason`` label (`unknown-dictionary`, `partition-mismatch`, `no-transform`, …); `rule` = the covering rule or `-`. Per rule: responses = sum, dictionary hits = `decision="delta"`, partition mismatches = `reason="partition-mismatch"` |
/// | `dcserve_rule_bytes_total` | rule, kind | compressible responses per rule: `kind` = `identity`, `best_plain`, `sent` (as the three `dcserve_compressible_*` totals) |
/// | `dcserve_open_connections`, `dcserve_stored_dictionaries`, `dcserve_store_degraded` | | gauges, refreshed at every scrape |
/// | `dcserve_tls_handshakes_total` | result | `completed` / `resumed` / `failed`, brought up to date at every scrape |
///
/// Thread-safe: metric handles are created once per label set and cached under a `Locked`.
public final class DCServeMetrics: CompressionObserver {
    private struct StatusCoding: Hashable, Sendable {
        let status: Int
        let coding: String
    }
    private struct CodingLevel: Hashable, Sendable {
        let coding: ContentCoding
        let level: Int
    }

    /// Per status and coding: the request counter and the body-bytes counter (labelled by coding
    /// only: swift-metrics hands out one shared counter per label set), found with one lookup.
    private let responses = LabelledCache<StatusCoding, (requests: Counter, bodyBytes: Counter)>()
    private let outcomes = LabelledCache<String, Counter>()
    private let liveEvents = LabelledCache<String, Counter>()
    private struct DecisionKey: Hashable, Sendable {
        let rule: String?
        let decision: String
        let reason: String
    }
    private let decisions = LabelledCache<DecisionKey, Counter>()
    private let ruleBytes = LabelledCache<String, (identity: Counter, bestPlain: Counter, sent: Counter)>()
    private let timers = LabelledCache<CodingLevel, Timer>()
    private let cacheHits = Counter(label: "dcserve_variant_cache_lookups_total", dimensions: [("result", "hit")])
    private let cacheMisses = Counter(label: "dcserve_variant_cache_lookups_total", dimensions: [("result", "miss")])
    private let identityBytes = Counter(label: "dcserve_compressible_identity_bytes_total")
    private let bestPlainBytes = Counter(label: "dcserve_compressible_best_plain_bytes_total")
    private let sentBytes = Counter(label: "dcserve_compressible_sent_bytes_total")
    private let storedTotal = Counter(label: "dcserve_dictionaries_stored_total")
    public let openConnections = Gauge(label: "dcserve_open_connections")
    private let tlsCompleted = Counter(label: "dcserve_tls_handshakes_total", dimensions: [("result", "completed")])
    private let tlsResumed = Counter(label: "dcserve_tls_handshakes_total", dimensions: [("result", "resumed")])
    private let tlsFailed = Counter(label: "dcserve_tls_handshakes_total", dimensions: [("result", "failed")])
    private let tlsReported = Locked((completed: 0, resumed: 0, failed: 0))
    public let storedDictionaries = Gauge(label: "dcserve_stored_dictionaries")
    /// 1 while the dictionary store is degraded (``Readiness/storeIsDegraded``), else 0.
    public let storeDegraded = Gauge(label: "dcserve_store_degraded")

    /// Per consumer of the memory budget (``MemoryBudget/Consumer``): its bytes of the budget and the
    /// bytes it holds now; `consumer="total"` is `server.memoryBytes` and the process's resident memory.
    private let memoryGauges: [String: (budget: Gauge, used: Gauge)] = Dictionary(uniqueKeysWithValues:
        (MemoryBudget.Consumer.allCases.map(\.rawValue) + ["total"]).map { name in
            (name, (Gauge(label: "dcserve_memory_budget_bytes", dimensions: [("consumer", name)]),
                    Gauge(label: "dcserve_memory_used_bytes", dimensions: [("consumer", name)])))
        })

    public init() {}

    /// Records the memory budget's division and what each consumer holds (`used`, by consumer).
    public func memory(budget: MemoryBudget, used: [MemoryBudget.Consumer: Int]) {
        for consumer in MemoryBudget.Consumer.allCases {
            memoryGauges[consumer.rawValue]?.budget.record(budget[consumer])
            memoryGauges[consumer.rawValue]?.used.record(used[consumer] ?? 0)
        }
        memoryGauges["total"]?.budget.record(budget.total)
        memoryGauges["total"]?.used.record(used.values.reduce(0, +))
    }

    /// One response written (called by `MetricsMiddleware`).
    public func response(status: Int, coding: String, bodyBytes count: Int64) {
        let counters = responses.get(StatusCoding(status: status, coding: coding)) {
            (requests: Counter(label: "dcserve_http_requests_total", dimensions: [("status", "\(status)"), ("coding", coding)]),
             bodyBytes: Counter(label: "dcserve_http_response_body_bytes_total", dimensions: [("coding", coding)]))
        }
        counters.requests.increment()
        counters.bodyBytes.increment(by: count)
    }

    /// Brings the TLS handshake counters up to the server's totals (they only grow).
    public func tlsHandshakes(completed: Int, resumed: Int, failed: Int) {
        let delta = tlsReported.withLock { last in
            defer { last = (completed, resumed, failed) }
            return (max(0, completed - last.completed), max(0, resumed - last.resumed), max(0, failed - last.failed))
        }
        tlsCompleted.increment(by: delta.0)
        tlsResumed.increment(by: delta.1)
        tlsFailed.increment(by: delta.2)
    }

    // MARK: CompressionObserver

    public func decided(_ decision: EncodingDecision, path: Substring) {
        let outcome: String = switch decision {
        case .dictionary(let coding, _): coding.rawValue
        case .plain(_, let reason): reason.rawValue
        case .notAcceptable: "notAcceptable"
        }
        outcomes.get(outcome) {
            Counter(label: "dcserve_dictionary_negotiations_total", dimensions: [("outcome", outcome)])
        }.increment()
    }

    public func variantCache(hit: Bool) { (hit ? cacheHits : cacheMisses).increment() }

    public func encoded(coding: ContentCoding, level: Int, duration: Duration) {
        timers.get(CodingLevel(coding: coding, level: level)) {
            Timer(label: "dcserve_compression_duration_seconds", dimensions: [("coding", coding.rawValue), ("level", "\(level)")])
        }.recordNanoseconds(duration.nanoseconds)
    }

    public func storedDictionary(_ hash: DictionaryHash, bytes: Int) { storedTotal.increment() }

    public func live(rule: String, _ event: LiveEvent) {
        liveEvents.get("\(rule)\u{0}\(event.rawValue)") {
            Counter(label: "dcserve_live_events_total", dimensions: [("rule", rule), ("event", event.rawValue)])
        }.increment()
    }

    public func sizes(rule: String?, identity: Int, bestPlain: Int, sent: Int) {
        identityBytes.increment(by: identity)
        bestPlainBytes.increment(by: bestPlain)
        sentBytes.increment(by: sent)
        let label = rule ?? "-"
        let counters = ruleBytes.get(label) {
            (identity: Counter(label: "dcserve_rule_bytes_total", dimensions: [("rule", label), ("kind", "identity")]),
             bestPlain: Counter(label: "dcserve_rule_bytes_total", dimensions: [("rule", label), ("kind", "best_plain")]),
             sent: Counter(label: "dcserve_rule_bytes_total", dimensions: [("rule", label), ("kind", "sent")]))
        }
        counters.identity.increment(by: identity)
        counters.bestPlain.increment(by: bestPlain)
        counters.sent.increment(by: sent)
    }

    public func responded(_ record: ResponseRecord) {
        let d = record.decision
        let key = DecisionKey(rule: d.rule, decision: d.kind, reason: d.reasonLabel)
        decisions.get(key) {
            Counter(label: "dcserve_decisions_total",
                    dimensions: [("rule", key.rule ?? "-"), ("decision", key.decision), ("reason", key.reason)])
        }.increment()
    }
}

/// Metric handles by label key, created on first use. Thread-safe.
final class LabelledCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let values = Locked<[Key: Value]>([:])

    func get(_ key: Key, make: () -> Value) -> Value {
        values.withLock { v in
            if let found = v[key] { return found }
            let made = make()
            v[key] = made
            return made
        }
    }
}

extension Duration {
    /// Whole nanoseconds (saturating).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds.multipliedReportingOverflow(by: 1_000_000_000).partialValue &+ attoseconds / 1_000_000_000
    }
}
