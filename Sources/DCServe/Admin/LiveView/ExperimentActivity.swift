import Foundation

/// What the live view shows about the A/B switch: the last `capacity` finished responses with their
/// group, bytes and time to last byte, summarised per group on demand. Thread-safe (a ``BoundedRing``).
public final class ExperimentActivity: Sendable {
    public struct Sample: Sendable {
        public var group: ExperimentGroup
        public var sent: Int64
        public var identity: Int64
        public var nanoseconds: UInt64
    }

    /// One group over the retained samples. Percentiles are nearest-rank, in milliseconds.
    public struct GroupSummary: Codable, Sendable, Equatable {
        public var group: String
        public var responses: Int
        public var sent: Int64
        public var identity: Int64
        public var p50Milliseconds: Double
        public var p95Milliseconds: Double
    }

    public let recent: BoundedRing<Sample>

    public init(capacity: Int = 1000) { recent = BoundedRing(capacity: capacity) }

    public func record(group: ExperimentGroup, sent: Int64, identity: Int64, nanoseconds: UInt64) {
        recent.append(Sample(group: group, sent: sent, identity: identity, nanoseconds: nanoseconds))
    }

    /// Per group present in the retained samples, in `ExperimentGroup.allCases` order.
    public func summaries() -> [GroupSummary] {
        let samples = recent.snapshot()
        return ExperimentGroup.allCases.compactMap { group in
            let mine = samples.filter { $0.group == group }
            guard !mine.isEmpty else { return nil }
            let times = mine.map(\.nanoseconds).sorted()
            func percentile(_ p: Double) -> Double {
                let rank = max(0, min(times.count - 1, Int((p * Double(times.count)).rounded(.up)) - 1))
                return Double(times[rank]) / 1_000_000
            }
            return GroupSummary(group: group.rawValue, responses: mine.count, sent: mine.reduce(0) { $0 + $1.sent },
                                identity: mine.reduce(0) { $0 + $1.identity },
                                p50Milliseconds: percentile(0.5), p95Milliseconds: percentile(0.95))
        }
    }
}
