import DictionaryCodec
import DictionaryTransport
import Foundation

/// The retention rules of ``DictionaryRetention`` as a pure function over records — the same rules
/// ``DirectoryDictionaryStore/prune(now:)`` applies:
/// 1. past `expires + keepPastExpiry`: removed (`expired`);
/// 2. `maxCountPerRule` bounds only **expired** dictionaries of a rule (past `expires`, still kept):
///    the least recently served of those go (`ruleCount`); fresh ones are never removed by the count;
/// 3. `maxTotalBytes`: expired ones first, then the least recently served (`totalBytes`).
/// Ties are broken by (hash, partition) for a stable order. A record is a (partition, hash) row: the
/// same bytes in two partitions are two records, each with its own recency.
enum RetentionPlan {
    struct Record: Sendable {
        var hash: DictionaryHash
        var partition: String? = nil
        var rule: String?
        var byteSize: Int
        var lastServed: Date
        var expires: Date?
    }

    private struct Key: Hashable {
        var partition: String?
        var hash: DictionaryHash
    }

    static func removals(_ records: [Record], retention: DictionaryRetention, now: Date) -> [DictionaryRemoval] {
        var remaining = Dictionary(records.map { (Key(partition: $0.partition, hash: $0.hash), $0) }, uniquingKeysWith: { a, _ in a })
        var removals: [DictionaryRemoval] = []
        func remove(_ record: Record, _ reason: DictionaryRemoval.Reason) {
            guard remaining.removeValue(forKey: Key(partition: record.partition, hash: record.hash)) != nil else { return }
            removals.append(DictionaryRemoval(hash: record.hash, reason: reason, partition: record.partition))
        }
        func isExpired(_ r: Record) -> Bool { r.expires.map { now > $0 } ?? false }
        func dropFirst(_ a: Record, _ b: Record) -> Bool {
            (isExpired(a) ? 0 : 1, a.lastServed, a.hash, a.partition ?? "") < (isExpired(b) ? 0 : 1, b.lastServed, b.hash, b.partition ?? "")
        }
        if let keep = retention.keepPastExpiry {
            for record in records.sorted(by: dropFirst) {
                if let expires = record.expires, now > expires.addingTimeInterval(keep) { remove(record, .expired) }
            }
        }
        if let perRule = retention.maxCountPerRule {
            let byRule = Dictionary(grouping: remaining.values, by: { $0.rule ?? "" })
            for (_, entries) in byRule where entries.count > perRule {
                let expired = entries.filter(isExpired).sorted(by: dropFirst)
                for record in expired.prefix(entries.count - perRule) { remove(record, .ruleCount) }
            }
        }
        if let maxBytes = retention.maxTotalBytes {
            var total = remaining.values.reduce(0) { $0 + $1.byteSize }
            if total > maxBytes {
                for record in remaining.values.sorted(by: dropFirst) {
                    guard total > maxBytes else { break }
                    total -= record.byteSize
                    remove(record, .totalBytes)
                }
            }
        }
        return removals
    }
}
