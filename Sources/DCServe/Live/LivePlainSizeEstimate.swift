import DictionaryCodec
import Locking

/// What live responses would have weighed in the client's best plain coding, for the "bytes saved by
/// dictionaries" figures, estimated from a sample instead of encoded for every response: each live
/// version is new, so measuring its plain alternative means a full encode of the body, which costs
/// more than the delta that is sent.
///
/// Per (rule, coding), the ratio of the last measured response (plain size ÷ identity size) stands
/// for the rule's responses until the next measurement. Until a pair has a ratio, every response of it
/// is measured; then one at most per `interval` (one in flight at a time).
///
/// Thread-safety: all methods may be called from any thread.
final class LivePlainSizeEstimate: Sendable {
    struct Key: Hashable, Sendable {
        var rule: String
        var coding: ContentCoding
    }

    private struct Entry {
        var ratio: Double
        var measuredAt: ContinuousClock.Instant
        var measuring = false
    }

    /// The shortest time between two measurements of one (rule, coding).
    let interval: Duration
    private let entries = Locked([Key: Entry]())

    init(interval: Duration = .seconds(1)) {
        self.interval = interval
    }

    /// The estimated plain size of an `identity`-byte response of `key` (nil while the pair has no
    /// measurement), and whether the caller should measure this response and call ``record``.
    func estimate(_ key: Key, identity: Int, now: ContinuousClock.Instant = .now) -> (size: Int?, measure: Bool) {
        entries.withLock { entries in
            guard var entry = entries[key] else { return (nil, true) }
            let due = !entry.measuring && now - entry.measuredAt >= interval
            if due {
                entry.measuring = true
                entry.measuredAt = now
                entries[key] = entry
            }
            return (Int((entry.ratio * Double(identity)).rounded()), due)
        }
    }

    /// Records a measurement asked for by ``estimate``: the `plain` size of an `identity`-byte
    /// response (nil when it failed: the last ratio stays).
    func record(_ key: Key, identity: Int, plain: Int?, now: ContinuousClock.Instant = .now) {
        entries.withLock { entries in
            entries[key]?.measuring = false
            guard let plain, identity > 0 else { return }
            let ratio = Double(plain) / Double(identity)
            if entries[key] == nil {
                entries[key] = Entry(ratio: ratio, measuredAt: now)
            } else {
                entries[key]?.ratio = ratio
            }
        }
    }
}
