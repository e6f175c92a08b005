import DictionaryCodec
import DictionaryTransport
import Foundation
import Locking

/// What the live view shows about traffic, collected as a ``CompressionObserver``: the last
/// `recentCapacity` responses (a ``BoundedRing``), dictionary hits per dictionary since start, and
/// bytes per 10 s (``SavingsTimeline``). Thread-safe; each report costs one short lock.
public final class LiveActivity: CompressionObserver {
    public let recent: BoundedRing<ResponseRecord>
    public let timeline: SavingsTimeline
    /// Dictionary-coded responses per dictionary hash since start (bounded: cleared when it would
    /// exceed `maxTrackedDictionaries`, so a flood of distinct hashes cannot grow it).
    private let hits = Locked<[DictionaryHash: Int]>([:])
    public let maxTrackedDictionaries: Int
    /// The A/B switch's recent responses per group (filled only when an experiment is configured).
    public let experiment = ExperimentActivity()

    public init(recentCapacity: Int = 200, timeline: SavingsTimeline = SavingsTimeline(), maxTrackedDictionaries: Int = 100_000) {
        recent = BoundedRing(capacity: recentCapacity)
        self.timeline = timeline
        self.maxTrackedDictionaries = maxTrackedDictionaries
    }

    /// Responses coded against `hash` since start.
    public func hitCount(_ hash: DictionaryHash) -> Int { hits.withLock { $0[hash] ?? 0 } }

    /// Hit counts for several hashes under one lock.
    public func hitCounts(_ hashes: [DictionaryHash]) -> [Int] { hits.withLock { h in hashes.map { h[$0] ?? 0 } } }

    // MARK: CompressionObserver

    public func responded(_ record: ResponseRecord) {
        var record = record
        if record.date == nil { record.date = Date() }
        recent.append(record)
        if case .delta(_, let hash) = record.decision.outcome {
            hits.withLock { h in
                if h[hash] == nil && h.count >= maxTrackedDictionaries { h.removeAll(keepingCapacity: true) }
                h[hash, default: 0] += 1
            }
        }
    }

    public func sizes(rule: String?, identity: Int, bestPlain: Int, sent: Int) {
        timeline.add(identity: identity, bestPlain: bestPlain, sent: sent)
    }

    public func decided(_ decision: EncodingDecision, path: Substring) {}
    public func variantCache(hit: Bool) {}
    public func encoded(coding: ContentCoding, level: Int, duration: Duration) {}
    public func storedDictionary(_ hash: DictionaryHash, bytes: Int) {}
}
