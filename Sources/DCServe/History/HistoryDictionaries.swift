import DictionaryCodec
import DictionaryTransport
import Foundation
import HTTPServer
import HTTPTypes
import Logging

/// History dictionaries as one part of the application: the history rules, their
/// builders, the index of accepted dictionaries and the metrics, shared by
/// ``HistoryDictionaryMiddleware`` (collects bodies, offers `Link`, serves the dictionary URL) and
/// ``DictionaryCompressionMiddleware`` (codes responses against them, by (partition, hash, path)).
///
/// Immutable after init; its parts are thread-safe.
public final class HistoryDictionaries: Sendable {
    public let index: HistoryDictionaryIndex
    public let metrics: HistoryDictionaryMetrics
    let rules: DictionaryRuleSet
    let builders: [String: HistoryDictionaryBuilder]
    let library: DictionaryLibrary
    /// Key of partition ids (``PartitionID``); empty when no rule is private.
    let partitionSecret: [UInt8]
    let clock: @Sendable () -> Date

    /// nil when no rule has `history`. Rebuilds the index from the store's records of history rules.
    public init?(rules: DictionaryRuleSet, store: any DictionaryStore, library: DictionaryLibrary, partitionSecret: [UInt8],
                 metrics: HistoryDictionaryMetrics = HistoryDictionaryMetrics(), logger: Logger,
                 clock: @escaping @Sendable () -> Date = Date.init) {
        let historyRules = rules.historyRules
        guard !historyRules.isEmpty else { return nil }
        let index = HistoryDictionaryIndex()
        self.index = index
        self.metrics = metrics
        self.rules = rules
        self.library = library
        self.partitionSecret = partitionSecret
        self.clock = clock
        builders = Dictionary(historyRules.map { rule in
            (rule.name, HistoryDictionaryBuilder(rule: rule, store: store, library: library, index: index, metrics: metrics,
                                                 logger: logger, clock: clock))
        }, uniquingKeysWith: { a, _ in a })
        shapes = Dictionary(historyRules.map { ($0.name, (keep: $0.history!.keep, group: $0.historyGroup!)) },
                            uniquingKeysWith: { a, _ in a })
        index.load(from: store, rules: shapes, now: clock())
    }

    /// What the index needs of each history rule to place a store record.
    private let shapes: HistoryDictionaryIndex.RuleShapes

    /// Adds a dictionary another instance sharing the store built (its record, as the store
    /// notified it) to the index: offered (`Link`) and accepted here from now on. Records of other
    /// rules are ignored.
    public func learn(_ record: DictionaryMetadata) {
        index.learn(record, rules: shapes, now: clock())
    }

    /// Applies the shared windows' limits (``HistoryDictionaryBuilder/housekeep()``); returns at once.
    public func housekeep() { for builder in builders.values { builder.housekeep() } }

    /// The partition of `request` under `rule` (`""` = the shared one of a rule without `partition`);
    /// nil when its key is ambiguous (``RequestPartition/ambiguous``): no history dictionary for it.
    func partition(of fields: HTTPFields, rule: DictionaryRuleSet.Rule) -> String? {
        guard let source = rule.partition else { return "" }
        return (PartitionID.fromRequest(fields, source: source, secret: partitionSecret) ?? .anonymous).storeID
    }

    /// Notes a response coded against history dictionary `member` (metrics: used, bytes).
    func recordUse(_ member: HistoryDictionaryIndex.Member, coding: ContentCoding, identity: Int, sent: Int) {
        metrics.used(rule: member.key.rule, coding: coding.rawValue, identity: identity, sent: sent)
    }

    /// Blocks until every queued build and store write is done (tests, shutdown).
    public func waitForBuilds() { for builder in builders.values { builder.waitForBuilds() } }
}
