import Foundation

/// The result of `dcserve estimate`: totals, per rule and per endpoint group, the request series
/// behind the plot, and the entries that were not replayed (with why). `Codable` (the `--json`
/// form). Pure value.
public struct EstimateReport: Codable, Sendable {
    /// Byte and hit counts over a set of replayed requests.
    public struct Totals: Codable, Sendable, Equatable {
        public var requests = 0
        /// Recorded (decoded) body bytes.
        public var identityBytes = 0
        /// Body bytes dcserve sends without dictionary transport (same configuration, no rules).
        public var plainBodyBytes = 0
        /// Heads and bodies dcserve sends without dictionary transport.
        public var plainBytes = 0
        /// The codings of those plain responses, with their counts.
        public var plainCodings: [String: Int] = [:]
        /// Bodies compressed with brotli at quality 11 (a reference: the best static coding).
        public var br11Bytes = 0
        /// Body bytes with dictionary transport (deltas and plain responses).
        public var dictionaryBodyBytes = 0
        /// Heads, bodies and `Link` dictionary fetches with dictionary transport.
        public var dictionaryBytes = 0
        public var linkFetches = 0
        public var linkBytes = 0
        /// Responses sent as dcb/dcz deltas.
        public var hits = 0
        /// Why the other responses were not deltas (see ``ReplayObservation/missReason``).
        public var misses: [String: Int] = [:]

        public var hitRatio: Double { requests == 0 ? 0 : Double(hits) / Double(requests) }
        /// Fraction of the plain bytes that dictionary transport saves (negative when it costs more).
        public var savedVersusPlain: Double { plainBytes == 0 ? 0 : 1 - Double(dictionaryBytes) / Double(plainBytes) }

        mutating func add(_ row: RequestRow) {
            requests += 1
            identityBytes += row.identityBytes
            plainBodyBytes += row.plainBodyBytes
            plainBytes += row.plainBytes
            plainCodings[row.plainCoding, default: 0] += 1
            br11Bytes += row.br11Bytes
            dictionaryBodyBytes += row.dictionaryBodyBytes
            dictionaryBytes += row.dictionaryBytes
            linkFetches += row.linkFetches
            linkBytes += row.linkBytes
            if let miss = row.missReason { misses[miss, default: 0] += 1 } else { hits += 1 }
        }

        enum CodingKeys: String, CodingKey {
            case requests, identityBytes, plainBodyBytes, plainBytes, plainCodings, br11Bytes, dictionaryBodyBytes
            case dictionaryBytes, linkFetches, linkBytes, hits, misses, hitRatio, savedVersusPlain
        }

        public init() {}

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            requests = try c.decode(Int.self, forKey: .requests)
            identityBytes = try c.decode(Int.self, forKey: .identityBytes)
            plainBodyBytes = try c.decode(Int.self, forKey: .plainBodyBytes)
            plainBytes = try c.decode(Int.self, forKey: .plainBytes)
            plainCodings = try c.decode([String: Int].self, forKey: .plainCodings)
            br11Bytes = try c.decode(Int.self, forKey: .br11Bytes)
            dictionaryBodyBytes = try c.decode(Int.self, forKey: .dictionaryBodyBytes)
            dictionaryBytes = try c.decode(Int.self, forKey: .dictionaryBytes)
            linkFetches = try c.decode(Int.self, forKey: .linkFetches)
            linkBytes = try c.decode(Int.self, forKey: .linkBytes)
            hits = try c.decode(Int.self, forKey: .hits)
            misses = try c.decode([String: Int].self, forKey: .misses)
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(requests, forKey: .requests)
            try c.encode(identityBytes, forKey: .identityBytes)
            try c.encode(plainBodyBytes, forKey: .plainBodyBytes)
            try c.encode(plainBytes, forKey: .plainBytes)
            try c.encode(plainCodings, forKey: .plainCodings)
            try c.encode(br11Bytes, forKey: .br11Bytes)
            try c.encode(dictionaryBodyBytes, forKey: .dictionaryBodyBytes)
            try c.encode(dictionaryBytes, forKey: .dictionaryBytes)
            try c.encode(linkFetches, forKey: .linkFetches)
            try c.encode(linkBytes, forKey: .linkBytes)
            try c.encode(hits, forKey: .hits)
            try c.encode(misses, forKey: .misses)
            try c.encode((hitRatio * 10_000).rounded() / 10_000, forKey: .hitRatio)
            try c.encode((savedVersusPlain * 10_000).rounded() / 10_000, forKey: .savedVersusPlain)
        }
    }

    /// One replayed request, as plotted and summed.
    public struct RequestRow: Codable, Sendable, Equatable {
        /// Position in the HAR's `log.entries` (0-based).
        public var entry: Int
        /// Seconds since the first replayed request.
        public var time: Double
        public var method: String
        public var path: String
        public var group: String
        /// The dictionary rule dcserve applied (`DCServe-Decision`'s `rule=`), nil when none.
        public var rule: String?
        public var status: Int
        public var identityBytes: Int
        public var plainCoding: String
        public var plainBodyBytes: Int
        public var plainBytes: Int
        public var br11Bytes: Int
        public var dictionaryCoding: String
        public var dictionaryBodyBytes: Int
        public var dictionaryBytes: Int
        public var linkFetches: Int
        public var linkBytes: Int
        /// Nil for a delta; otherwise why not.
        public var missReason: String?
        public var error: String?
    }

    /// An entry named because it was not replayed, or replayed from a base64 body.
    public struct NamedEntry: Codable, Sendable, Equatable {
        public var entry: Int
        public var method: String
        public var url: String
        public var reason: String
    }

    public struct Row: Codable, Sendable, Equatable {
        public var name: String
        public var totals: Totals
    }

    public var file: String
    public var creator: String
    /// The origin replayed (entries of other origins are listed in `skipped`).
    public var origin: String
    public var entries: Int
    public var replayed: Int
    public var totals = Totals()
    /// Per dictionary rule; requests no rule applied to are under `(none)`.
    public var rules: [Row] = []
    public var groups: [Row] = []
    public var requests: [RequestRow] = []
    /// Entries not replayed: body missing from the HAR, or another origin.
    public var skipped: [NamedEntry] = []
    /// Entries whose body was recorded in base64 (`content.encoding: "base64"`) and decoded.
    public var base64Bodies: [NamedEntry] = []
    /// What the estimate does not model.
    public var notes: [String] = []

    /// Sums `requests` into `totals`, `rules` and `groups` (rules in first-seen order, `(none)` last;
    /// groups in first-seen order).
    mutating func summarise() {
        totals = Totals()
        var byRule: [String: Totals] = [:], ruleOrder: [String] = []
        var byGroup: [String: Totals] = [:], groupOrder: [String] = []
        for row in requests {
            totals.add(row)
            let rule = row.rule ?? Self.noRule
            if byRule[rule] == nil { ruleOrder.append(rule) }
            byRule[rule, default: Totals()].add(row)
            if byGroup[row.group] == nil { groupOrder.append(row.group) }
            byGroup[row.group, default: Totals()].add(row)
        }
        ruleOrder = ruleOrder.filter { $0 != Self.noRule } + (byRule[Self.noRule] == nil ? [] : [Self.noRule])
        rules = ruleOrder.map { Row(name: $0, totals: byRule[$0]!) }
        groups = groupOrder.map { Row(name: $0, totals: byGroup[$0]!) }
    }

    public static let noRule = "(none)"
}
