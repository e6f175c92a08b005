import DictionaryCodec
import DictionaryTransport
import Foundation

/// The retention rules of ``DictionaryRetention`` as a pure function over records, the same rules
/// ``DirectoryDictionaryStore/prune(now:)`` applies: expired (past `expires + keepPastExpiry`) first,
/// then per-rule counts, then total bytes, least recently served first (ties by hash).
enum RetentionPlan {
    struct Record: Sendable {
        var hash: DictionaryHash
        var rule: String?
        var byteSize: Int
        var lastServed: Date
        var expires: Date?
    }

    static func removals(_ records: [Record], retention: DictionaryRetention, now: Date) -> [DictionaryRemoval] {
        var remaining = Dictionary(uniqueKeysWithValues: records.map { ($0.hash, $0) })
        var removals: [DictionaryRemoval] = []
        func remove(_ hash: DictionaryHash, _ reason: DictionaryRemoval.Reason) {
            guard remaining.removeValue(forKey: hash) != nil else { return }
            removals.append(DictionaryRemoval(hash: hash, reason: reason))
        }
        func oldestFirst(_ a: Record, _ b: Record) -> Bool { (a.lastServed, a.hash) < (b.lastServed, b.hash) }
        if let keep = retention.keepPastExpiry {
            for record in records.sorted(by: oldestFirst) {
                if let expires = record.expires, now > expires.addingTimeInterval(keep) { remove(record.hash, .expired) }
            }
        }
        if let perRule = retention.maxCountPerRule {
            let byRule = Dictionary(grouping: remaining.values, by: { $0.rule ?? "" })
            for (_, entries) in byRule where entries.count > perRule {
                for record in entries.sorted(by: oldestFirst).prefix(entries.count - perRule) { remove(record.hash, .ruleCount) }
            }
        }
        if let maxBytes = retention.maxTotalBytes {
            var total = remaining.values.reduce(0) { $0 + $1.byteSize }
            for record in remaining.values.sorted(by: oldestFirst) where total > maxBytes {
                total -= record.byteSize
                remove(record.hash, .totalBytes)
            }
        }
        return removals
    }
}
