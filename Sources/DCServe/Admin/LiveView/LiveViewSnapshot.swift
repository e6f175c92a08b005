import DictionaryCodec
import DictionaryTransport
import Foundation

/// The JSON the live view page polls (`/dcserve/live.json`): stored dictionaries, recent responses
/// and bytes per 10 s. Built on demand from the store's records and a ``LiveActivity``; shows no
/// secret: a partition appears only as the first 8 hex digits of its HMAC id (never the credential,
/// which is never stored), request paths without their query. A value type.
public struct LiveViewSnapshot: Codable, Sendable {
    public struct StoredEntry: Codable, Sendable {
        public var hash: String          // 16 hex digits
        public var rule: String?
        public var match: String
        public var matchDest: [String]
        public var id: String?
        public var size: Int
        public var ageSeconds: Int
        public var lastServedSecondsAgo: Int
        public var hits: Int
        public var source: String?
        public var partition: String?    // 8-digit prefix, "anonymous", or nil (shared)
    }
    public struct Request: Codable, Sendable {
        public var time: Double          // seconds since 1970
        public var method: String
        public var path: String
        public var status: Int
        public var decision: String      // delta / plain / not-acceptable
        public var coding: String
        public var reason: String        // hit or a DecisionReason label
        public var dictionary: String?   // 16 hex digits
        public var rule: String?
        public var identity: Int?
        public var bestPlain: Int?
        public var sent: Int?
        public var field: String         // the DCServe-Decision value
    }
    /// Per rule over the recent responses: how many, how many were deltas, and the bytes of the
    /// responses whose best plain size is known (`bestPlain` − `sent` = saved against the best coding
    /// dcserve would have sent without dictionaries, not against identity).
    public struct RuleSummary: Codable, Sendable {
        public var rule: String
        public var responses = 0, deltas = 0, bestPlain = 0, sent = 0, saved = 0
        public var hitRatio: Double { responses == 0 ? 0 : Double(deltas) / Double(responses) }

        enum CodingKeys: String, CodingKey { case rule, responses, deltas, bestPlain, sent, saved, hitRatio }

        init(rule: String) { self.rule = rule }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            rule = try c.decode(String.self, forKey: .rule)
            responses = try c.decode(Int.self, forKey: .responses)
            deltas = try c.decode(Int.self, forKey: .deltas)
            bestPlain = try c.decode(Int.self, forKey: .bestPlain)
            sent = try c.decode(Int.self, forKey: .sent)
            saved = try c.decode(Int.self, forKey: .saved)
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(rule, forKey: .rule)
            try c.encode(responses, forKey: .responses)
            try c.encode(deltas, forKey: .deltas)
            try c.encode(bestPlain, forKey: .bestPlain)
            try c.encode(sent, forKey: .sent)
            try c.encode(saved, forKey: .saved)
            try c.encode(hitRatio, forKey: .hitRatio)
        }
    }
    public struct Totals: Codable, Sendable {
        public var responses = 0, deltas = 0, identity = 0, bestPlain = 0, sent = 0, saved = 0
    }

    public var now: Double
    public var dictionaryCount: Int
    public var dictionaries: [StoredEntry]
    public var requests: [Request]          // newest first
    public var requestsSeen: Int
    public var bucketSeconds: Int
    public var buckets: [SavingsTimeline.Bucket]
    /// Sums over `buckets` (the plotted window), and responses/deltas over `requests`.
    public var totals: Totals
    /// Per rule over `requests` (GET and HEAD with a rule), in order of the rule's most recent response.
    public var rules: [RuleSummary]
    /// The A/B switch's groups over their recent finished responses (empty without an experiment).
    public var groups: [ExperimentActivity.GroupSummary]

    /// Dictionaries shown at most (most recently served first).
    public static let maxDictionaries = 200

    public init(store: any DictionaryStore, activity: LiveActivity, now: Date = Date()) {
        self.now = now.timeIntervalSince1970
        // Every record of every partition (the stores keep them in memory; read on each poll, not per request).
        let all = store.records
        dictionaryCount = all.count
        var records: [(DictionaryHash, DictionaryMetadata)] = all.compactMap { m in
            DictionaryHash(hex: m.hash).map { ($0, m) }
        }
        records.sort { $0.1.lastServed > $1.1.lastServed }
        records = Array(records.prefix(Self.maxDictionaries))
        let hits = activity.hitCounts(records.map(\.0))
        dictionaries = zip(records, hits).map { record, hits in
            let (hash, m) = record
            return StoredEntry(
                hash: hash.hexPrefix(16), rule: m.rule, match: m.match, matchDest: m.matchDestinations, id: m.id,
                size: m.byteSize, ageSeconds: max(0, Int(now.timeIntervalSince(m.firstServed))),
                lastServedSecondsAgo: max(0, Int(now.timeIntervalSince(m.lastServed))), hits: hits,
                source: m.sourcePath, partition: m.partition.map(Self.partitionPrefix))
        }
        requests = activity.recent.snapshot().reversed().map { r in
            let d = r.decision
            return Request(time: (r.date ?? Date()).timeIntervalSince1970, method: r.method, path: r.path, status: r.status,
                           decision: d.kind, coding: d.coding, reason: d.reasonLabel, dictionary: d.dictionaryPrefix,
                           rule: d.rule, identity: d.identityBytes, bestPlain: d.bestPlainBytes, sent: d.sentBytes,
                           field: d.fieldValue)
        }
        requestsSeen = activity.recent.appendedCount
        bucketSeconds = activity.timeline.bucketSeconds
        buckets = activity.timeline.snapshot(now: now)
        var t = Totals()
        for b in buckets {
            t.identity += b.identity; t.bestPlain += b.bestPlain; t.sent += b.sent; t.saved += b.saved
        }
        t.responses = requests.count
        t.deltas = requests.filter { $0.decision == "delta" }.count
        totals = t
        rules = Self.summarise(requests)
        groups = activity.experiment.summaries()
    }

    /// ``RuleSummary`` per rule of `requests` (GET and HEAD only).
    static func summarise(_ requests: [Request]) -> [RuleSummary] {
        var byRule: [String: RuleSummary] = [:], order: [String] = []
        for r in requests where r.method == "GET" || r.method == "HEAD" {
            guard let rule = r.rule else { continue }
            if byRule[rule] == nil { order.append(rule) }
            var summary = byRule[rule] ?? RuleSummary(rule: rule)
            summary.responses += 1
            if r.decision == "delta" { summary.deltas += 1 }
            if let bestPlain = r.bestPlain, let sent = r.sent {
                summary.bestPlain += bestPlain
                summary.sent += sent
                summary.saved += bestPlain - sent
            }
            byRule[rule] = summary
        }
        return order.map { byRule[$0]! }
    }

    /// A partition id as shown: its first 8 characters (ids are 64 hex digits of an HMAC).
    static func partitionPrefix(_ id: String) -> String {
        id == "anonymous" ? id : String(id.prefix(8))
    }

    /// The snapshot as JSON (sorted keys).
    public func json() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? Array(encoder.encode(self))) ?? Array("{}".utf8)
    }
}
