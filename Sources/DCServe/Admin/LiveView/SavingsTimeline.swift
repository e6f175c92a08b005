import Foundation
import Locking

/// Bytes of compressible responses per fixed time bucket (default 10 s), for the live view's plot:
/// identity, best plain (what the client's best coding without dictionaries would have sent) and
/// sent; saved by dictionaries = best plain − sent. Keeps the last `bucketCount` buckets.
/// Thread-safe (one `Locked`).
public final class SavingsTimeline: Sendable {
    public struct Bucket: Sendable, Equatable, Codable {
        /// Start of the bucket, seconds since 1970.
        public var start: Int
        public var responses = 0
        public var identity = 0
        public var bestPlain = 0
        public var sent = 0
        /// best plain − sent (filled in by `snapshot`).
        public var saved = 0
        public init(start: Int) { self.start = start }
    }

    public let bucketSeconds: Int
    public let bucketCount: Int
    private let buckets = Locked<[Bucket]>([])

    public init(bucketSeconds: Int = 10, bucketCount: Int = 60) {
        self.bucketSeconds = max(1, bucketSeconds)
        self.bucketCount = max(1, bucketCount)
    }

    /// Adds one response's sizes at `date`.
    public func add(identity: Int, bestPlain: Int, sent: Int, at date: Date = Date()) {
        let start = Int(date.timeIntervalSince1970) / bucketSeconds * bucketSeconds
        buckets.withLock { b in
            if let i = b.lastIndex(where: { $0.start == start }) {
                b[i].responses += 1; b[i].identity += identity; b[i].bestPlain += bestPlain; b[i].sent += sent
                return
            }
            var new = Bucket(start: start)
            (new.responses, new.identity, new.bestPlain, new.sent) = (1, identity, bestPlain, sent)
            // A late report (deferred size) may belong before the newest bucket: keep order by start.
            let at = b.firstIndex { $0.start > start } ?? b.endIndex
            b.insert(new, at: at)
            if b.count > bucketCount { b.removeFirst(b.count - bucketCount) }
        }
    }

    /// The buckets of the last `bucketCount × bucketSeconds` seconds before `now` (inclusive of the
    /// current one), oldest first, with empty buckets filled in so the plot's x axis is time.
    public func snapshot(now: Date = Date()) -> [Bucket] {
        let current = Int(now.timeIntervalSince1970) / bucketSeconds * bucketSeconds
        let first = current - (bucketCount - 1) * bucketSeconds
        let stored = buckets.withLock { $0 }
        var byStart: [Int: Bucket] = [:]
        for b in stored where b.start >= first && b.start <= current { byStart[b.start] = b }
        return stride(from: first, through: current, by: bucketSeconds).map { start in
            var b = byStart[start] ?? Bucket(start: start)
            b.saved = max(0, b.bestPlain - b.sent)
            return b
        }
    }
}
