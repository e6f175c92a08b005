import DictionaryCodec
import DictionaryTransport
import Foundation
import Logging
import Synchronization

/// Collects the bodies of one history rule's responses per (group, partition) into a
/// ``HistoryWindow`` and builds that group's dictionary from it on a background queue.
///
/// `collect` runs on the request path and only appends to the window under a lock; when the
/// window holds `firstBuildBytes` of content (no dictionary yet) or `rebuildBytes` of new content (or new content and the current dictionary is
/// `rebuildSeconds` old, or the current one has lived half its lifetime), a build is queued. The
/// build (off the request path, one at a time per rule, within `buildMillisecondsPerMinute`) makes
/// the raw dictionary (newest content last), writes it to the store with its metadata (rule, scoped
/// `match`, `id` naming the group, partition, max-age = lifetime), puts it in the library and only
/// then publishes it in the ``HistoryDictionaryIndex``: a dictionary is offered only once a later
/// request naming it can be answered. A failed store write is logged and the group retried with
/// the next content. Windows are capped at `maxGroups` per rule (least recently used dropped).
///
/// Thread-safe; `collect` may be called from any loop concurrently.
public final class HistoryDictionaryBuilder: Sendable {
    let rule: DictionaryRuleSet.Rule
    let settings: HistoryDictionarySettings
    let group: HistoryGroupPattern
    let store: any DictionaryStore
    let library: DictionaryLibrary
    let index: HistoryDictionaryIndex
    let metrics: HistoryDictionaryMetrics
    let logger: Logger
    let clock: @Sendable () -> Date
    private let queue: DispatchQueue

    private struct Slot {
        var window: HistoryWindow
        var lastBuild: Date?
        var building = false
        var tick: UInt64 = 0
    }

    private struct State {
        var slots: [HistoryDictionaryIndex.GroupKey: Slot] = [:]
        var tick: UInt64 = 0
        var budget: HistoryBuildBudget
    }

    private let state: Mutex<State>

    init(rule: DictionaryRuleSet.Rule, store: any DictionaryStore, library: DictionaryLibrary, index: HistoryDictionaryIndex,
         metrics: HistoryDictionaryMetrics, logger: Logger, clock: @escaping @Sendable () -> Date = Date.init) {
        precondition(rule.history != nil && rule.historyGroup != nil, "not a history rule")
        self.rule = rule
        settings = rule.history!
        group = rule.historyGroup!
        self.store = store
        self.library = library
        self.index = index
        self.metrics = metrics
        self.logger = logger
        self.clock = clock
        queue = DispatchQueue(label: "dcserve.history.\(rule.name)", qos: .utility)
        state = Mutex(State(budget: HistoryBuildBudget(millisecondsPerMinute: rule.history!.buildMillisecondsPerMinute)))
    }

    /// Adds one response body of `groupValue` in `partition`; may queue a build. Never blocks on a build.
    func collect(_ body: [UInt8], groupValue: Substring, partition: String) {
        let key = HistoryDictionaryIndex.GroupKey(rule: rule.name, group: String(groupValue), partition: partition)
        let now = clock()
        let job: [[UInt8]]? = state.withLock { s in
            s.tick &+= 1
            var slot = s.slots[key] ?? Slot(window: HistoryWindow(capacity: settings.windowBytes))
            if s.slots[key] == nil, s.slots.count >= settings.maxGroups,
               let victim = s.slots.min(by: { $0.value.tick < $1.value.tick })?.key {
                s.slots[victim] = nil
                metrics.evicted(rule: rule.name)
            }
            slot.tick = s.tick
            slot.window.add(body)
            defer { s.slots[key] = slot }
            guard !slot.building, needsBuild(slot, now: now) else { return nil }
            guard s.budget.allows(at: now) else {
                metrics.skipped(rule: rule.name, reason: "budget")
                return nil
            }
            slot.building = true
            slot.window.markBuilt()
            slot.lastBuild = now
            return slot.window.bodies
        }
        if let job { queue.async { self.build(job, key: key) } }
    }

    private func needsBuild(_ slot: Slot, now: Date) -> Bool {
        guard let last = slot.lastBuild else { return slot.window.newBytes >= settings.firstBuildBytes }
        if slot.window.newBytes >= settings.rebuildBytes { return true }
        let age = now.timeIntervalSince(last)
        if slot.window.newBytes > 0 && age >= Double(settings.rebuildSeconds) { return true }
        return age >= Double(settings.lifetimeSeconds) / 2  // refresh: same bytes → same hash, new expiry
    }

    /// Builds, stores and publishes one dictionary (on `queue`).
    private func build(_ bodies: [[UInt8]], key: HistoryDictionaryIndex.GroupKey) {
        let start = ContinuousClock.now
        defer {
            let elapsed = ContinuousClock.now - start
            let now = clock()
            state.withLock { s in
                s.budget.charge(elapsed, at: now)
                s.slots[key]?.building = false
            }
        }
        let bytes = HistoryWindow.dictionary(from: bodies, maxBytes: settings.maxDictionaryBytes)
        guard !bytes.isEmpty else { return }
        let scoped = group.scopedMatch(key.group)
        let idText = "\(group.name):\(key.group)"
        let now = clock()
        do {
            let pattern = try URLPattern(scoped, base: nil)
            let dictionary = CompressionDictionary(bytes: bytes)
            _ = try store.put(bytes, description: DictionaryDescription(
                pattern: pattern, matchDestinations: rule.matchDest, id: DictionaryID(idText), rule: rule.name,
                sourcePath: group.groupPath(key.group), maxAge: settings.lifetimeSeconds,
                partition: rule.partition == nil ? nil : key.partition), now: now)
            library.insert(dictionary, candidate: DictionaryCandidate(hash: dictionary.hash, pattern: pattern,
                                                                       matchDestinations: rule.matchDest))
            index.publish(HistoryDictionaryIndex.Member(
                key: key, hash: dictionary.hash, pattern: pattern, id: idText,
                expires: now.addingTimeInterval(Double(settings.lifetimeSeconds))), keep: settings.keep, now: now)
            metrics.built(rule: rule.name)
            logger.debug("history dictionary built", metadata: [
                "rule": "\(rule.name)", "group": "\(key.group)", "bytes": "\(bytes.count)", "hash": "\(dictionary.hash.hex)"])
        } catch {
            metrics.skipped(rule: rule.name, reason: "failed")
            state.withLock { s in s.slots[key]?.lastBuild = nil }
            logger.error("cannot build history dictionary (the group keeps its previous one)",
                         metadata: ["rule": "\(rule.name)", "group": "\(key.group)", "error": "\(error)"])
        }
    }

    /// Blocks until the builds queued so far are done (tests, shutdown).
    public func waitForBuilds() { queue.sync {} }

    /// Windows tracked now.
    var groupCount: Int { state.withLock { $0.slots.count } }
}
