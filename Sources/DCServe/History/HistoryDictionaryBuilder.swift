import DictionaryCodec
import DictionaryTransport
import Foundation
import Logging
import Locking

/// Collects the bodies of one history rule's responses per (group, partition) into a
/// ``HistoryWindow`` and builds that group's dictionaries from it.
///
/// `collect` runs on the request path; under a lock it only appends to the window and decides
/// whether to build: when the window holds `firstBuildBytes` of content (no dictionary yet),
/// `rebuildBytes` of new content, or new content and the current dictionary is `rebuildSeconds`
/// old (or the current one has lived half its lifetime). Builds (one at a time per group, within
/// `buildMillisecondsPerMinute`) make the raw dictionary (newest content last) with its metadata
/// (rule, scoped `match`, `id` naming the group, partition, max-age = lifetime), and come in two kinds:
///
/// - **First build** (no dictionary in the index for the group, and at most
///   ``maxRequestPathBytes``): made on the request path (a copy and its SHA-256), put in the library and published in the
///   ``HistoryDictionaryIndex`` at once, and returned by `collect`: the response whose body completed
///   it carries its `Link` ("early Link"), and a request naming it or fetching its URL right after
///   is answered from memory. Its durable store write (fsync) is queued on the rule's background
///   queue. Until written, a restart forgets it, and if the library drops it from memory a request
///   for it misses (plain coding, 404 at its URL) — the same as a live version not yet written.
///   **If that write fails** (logged, `builds_skipped{reason="failed"}`), the dictionary stays
///   published and served from memory (its clients keep their deltas) and the group's next
///   `firstBuildBytes` of new content queue a background rebuild, which, once stored, replaces it.
/// - **Rebuilds** (and a group's first build when the index still holds one from the store, after a
///   restart or an evicted window): on the background queue, stored first, then put in the library
///   and published: offered only once the store holds it. A failed store write is logged and the group
///   retried with the next content; its previous dictionaries stay.
///
/// The budget counts the time spent making dictionaries, and a rebuild's store write; a first
/// build's queued store write is not counted. Pending store writes and builds are drained by
/// ``waitForBuilds()`` (tests, shutdown). Windows are capped at `maxGroups` per rule (least recently
/// used dropped); when the window dropped had content within the last minute, more groups are active
/// than `maxGroups` can hold — windows are dropped before they build — and that is counted
/// (`dcserve_history_groups_over_capacity_total`) and logged (a warning per rule at most once a minute).
///
/// **Windows shared through the store** (``DictionaryStore/historyWindows`` non-nil: PostgreSQL, several
/// instances): `collect` only queues the body (at most ``maxPendingBytes`` waiting) and the rule's
/// background queue appends the queued bodies to the store's windows, so a conversation's window holds
/// the bodies every instance served. When a group's shared counters call for a build (the same
/// thresholds, counted over all instances), the instance whose append saw it takes the group's build
/// lease, builds from the shared window, stores, publishes — and the other instances learn the
/// dictionary from the store (``HistoryDictionaries/learn(_:)``). Every build is then a background one
/// (stored before it is offered: an instance that learns it can always read it), so the `Link` comes
/// with the group's next response rather than the one that completed the first build. `maxGroups` and
/// idle windows (no content for `lifetimeSeconds`) are applied in the store by ``housekeep()``.
///
/// Thread-safe; `collect` may be called from any loop concurrently.
public final class HistoryDictionaryBuilder: Sendable {
    let rule: DictionaryRuleSet.Rule
    let settings: HistoryDictionarySettings
    let group: HistoryGroupPattern
    let store: any DictionaryStore
    /// The store's shared windows; nil: this process keeps its windows (``Slot``) in memory.
    let sharedWindows: (any HistoryWindowStore)?
    let library: DictionaryLibrary
    let index: HistoryDictionaryIndex
    let metrics: HistoryDictionaryMetrics
    let logger: Logger
    let clock: @Sendable () -> Date
    private let queue: DispatchQueue

    private struct Slot {
        var window: HistoryWindow
        var lastBuild: Date?
        /// The date (in the store: `firstServed`) of this group's last published dictionary. The next
        /// one is dated at least a second later: stores keep dates to the second, and a restart orders
        /// a group's dictionaries by it.
        var lastStored: Date?
        var building = false
        var tick: UInt64 = 0
        /// When the group last got content (over-capacity: is the window dropped still active?).
        var lastSeen: Date
    }

    private struct State {
        var slots: [HistoryDictionaryIndex.GroupKey: Slot] = [:]
        var tick: UInt64 = 0
        var budget: HistoryBuildBudget
        /// Active windows dropped since the last over-capacity log line, and when that line was.
        var droppedActive = 0
        var lastCapacityWarning: Date?
        /// Shared windows: bodies waiting for the store (oldest first), their bytes, whether an append
        /// is queued, and when a failed append was last logged.
        var pending: [HistoryWindowBody] = []
        var pendingBytes = 0
        var appendQueued = false
        var lastAppendWarning: Date?
    }

    private let state: Locked<State>

    /// Largest first dictionary made on the request path (a copy and a SHA-256 of it on the event
    /// loop: tens of microseconds at this size). A larger one (`maxBytes` and `firstBuildBytes`
    /// configured beyond it) is built in the background like a rebuild: stored, then offered.
    static let maxRequestPathBytes = 64 << 10

    /// Most body bytes waiting for the shared windows per rule; beyond it bodies are dropped (counted)
    /// until the store catches up.
    public static let maxPendingBytes = 4 << 20

    /// How long a build lease on a shared window lasts: longer than a build and its store write (the
    /// connect timeout); a lease left by an instance that stopped mid-build lapses after it.
    static let leaseSeconds: TimeInterval = 30

    init(rule: DictionaryRuleSet.Rule, store: any DictionaryStore, library: DictionaryLibrary, index: HistoryDictionaryIndex,
         metrics: HistoryDictionaryMetrics, logger: Logger, clock: @escaping @Sendable () -> Date = Date.init) {
        precondition(rule.history != nil && rule.historyGroup != nil, "not a history rule")
        self.rule = rule
        settings = rule.history!
        group = rule.historyGroup!
        self.store = store
        sharedWindows = store.historyWindows
        self.library = library
        self.index = index
        self.metrics = metrics
        self.logger = logger
        self.clock = clock
        queue = DispatchQueue(label: "dcserve.history.\(rule.name)", qos: .utility)
        state = Locked(State(budget: HistoryBuildBudget(millisecondsPerMinute: rule.history!.buildMillisecondsPerMinute)))
    }

    /// Adds one response body of `groupValue` in `partition`; may build. Never blocks on a build or
    /// a store write. Returns the dictionary this body completed when it was the group's first build,
    /// already published (the caller offers it on this very response); nil otherwise.
    @discardableResult
    func collect(_ body: [UInt8], groupValue: Substring, partition: String) -> HistoryDictionaryIndex.Member? {
        if sharedWindows != nil {
            share(body, group: HistoryGroupID(rule: rule.name, group: String(groupValue), partition: partition))
            return nil
        }
        let key = HistoryDictionaryIndex.GroupKey(rule: rule.name, group: String(groupValue), partition: partition)
        let now = clock()
        var warning: Int?
        defer { if let warning { warnOverCapacity(dropped: warning) } }
        let job: (bodies: [[UInt8]], first: Bool)? = state.withLock { s in
            s.tick &+= 1
            var slot = s.slots[key] ?? Slot(window: HistoryWindow(capacity: settings.windowBytes), lastSeen: now)
            if s.slots[key] == nil, s.slots.count >= settings.maxGroups,
               let victim = s.slots.min(by: { $0.value.tick < $1.value.tick }) {
                s.slots[victim.key] = nil
                metrics.evicted(rule: rule.name)
                // The least recently used window was active within the activity period: more groups
                // are active than maxGroups, and windows are dropped before they can build.
                if now.timeIntervalSince(victim.value.lastSeen) < Self.activityPeriod {
                    metrics.overCapacity(rule: rule.name)
                    s.droppedActive += 1
                    if s.lastCapacityWarning.map({ now.timeIntervalSince($0) >= Self.warningInterval || now < $0 }) ?? true {
                        s.lastCapacityWarning = now
                        warning = s.droppedActive
                        s.droppedActive = 0
                    }
                }
            }
            slot.tick = s.tick
            slot.lastSeen = now
            slot.window.add(body)
            defer { s.slots[key] = slot }
            guard !slot.building, needsBuild(newBytes: slot.window.newBytes, lastBuild: slot.lastBuild, now: now) else { return nil }
            guard s.budget.allows(at: now) else {
                metrics.skipped(rule: rule.name, reason: "budget")
                return nil
            }
            // The index is only asked here, on the rare path that builds (its lock nests inside ours;
            // it never calls back).
            let first = slot.lastBuild == nil && index.current(key, now: now) == nil
                && min(slot.window.totalBytes, settings.maxDictionaryBytes) <= Self.maxRequestPathBytes
            slot.building = true
            slot.window.markBuilt()
            slot.lastBuild = now
            return (slot.window.bodies, first)
        }
        guard let job else { return nil }
        guard job.first else {
            queue.async { self.build(job.bodies, key: key) }
            return nil
        }
        return buildFirst(job.bodies, key: key)
    }

    /// A group that got content this recently counts as active (seconds).
    static let activityPeriod: TimeInterval = 60
    /// At most one over-capacity log line per rule this often (seconds).
    static let warningInterval: TimeInterval = 60

    /// The over-capacity log line: `dropped` active windows since the previous one.
    private func warnOverCapacity(dropped: Int) {
        logger.warning("""
            history rule \(rule.name): more conversations active than history.maxGroups (\(settings.maxGroups)); \
            windows active within the last minute are dropped before they can build a dictionary: \
            raise dictionaries.\(rule.name).history.maxGroups
            """, metadata: ["rule": "\(rule.name)", "maxGroups": "\(settings.maxGroups)", "droppedActiveWindows": "\(dropped)"])
    }

    /// Whether a window with `newBytes` of new content, whose last dictionary was built at `lastBuild`,
    /// builds now.
    private func needsBuild(newBytes: Int, lastBuild: Date?, now: Date) -> Bool {
        guard let last = lastBuild else { return newBytes >= settings.firstBuildBytes }
        if newBytes >= settings.rebuildBytes { return true }
        let age = now.timeIntervalSince(last)
        if newBytes > 0 && age >= Double(settings.rebuildSeconds) { return true }
        return age >= Double(settings.lifetimeSeconds) / 2  // refresh: same bytes → same hash, new expiry
    }

    /// A dictionary made from a window, with everything storing and publishing it needs.
    private struct Made {
        var bytes: [UInt8]
        var dictionary: CompressionDictionary
        var candidate: DictionaryCandidate
        var description: DictionaryDescription
        var member: HistoryDictionaryIndex.Member
        /// Its date in the store (`firstServed`) and the start of its lifetime.
        var date: Date
        var storePartition: String?
    }

    /// Makes the dictionary of `bodies` for `key`, dated at least a second after `previous` (the
    /// group's last build; by default this process's); nil when empty. Throws when the group's scoped
    /// `match` does not compile.
    private func make(_ bodies: [[UInt8]], key: HistoryDictionaryIndex.GroupKey, previous: Date?? = nil) throws -> Made? {
        let bytes = HistoryWindow.dictionary(from: bodies, maxBytes: settings.maxDictionaryBytes)
        guard !bytes.isEmpty else { return nil }
        let idText = "\(group.name):\(key.group)"
        let previous = previous ?? state.withLock { $0.slots[key]?.lastStored }
        let date = max(clock(), previous.map { $0.addingTimeInterval(1) } ?? .distantPast)
        let pattern = try URLPattern(group.scopedMatch(key.group), base: nil)
        let dictionary = CompressionDictionary(bytes: bytes)
        let storePartition = rule.partition == nil ? nil : key.partition
        return Made(
            bytes: bytes, dictionary: dictionary,
            candidate: DictionaryCandidate(hash: dictionary.hash, pattern: pattern, matchDestinations: rule.matchDest),
            description: DictionaryDescription(pattern: pattern, matchDestinations: rule.matchDest, id: DictionaryID(idText),
                                               rule: rule.name, sourcePath: group.groupPath(key.group),
                                               maxAge: settings.lifetimeSeconds, partition: storePartition),
            member: HistoryDictionaryIndex.Member(key: key, hash: dictionary.hash, pattern: pattern, id: idText,
                                                  expires: date.addingTimeInterval(Double(settings.lifetimeSeconds)), built: date),
            date: date, storePartition: storePartition)
    }

    /// Puts `made` in the library, then publishes it: from here on it is offered and accepted.
    private func publish(_ made: Made) {
        library.insert(made.dictionary, candidate: made.candidate, partition: made.storePartition)
        index.publish(made.member, keep: settings.keep, now: made.date)
        state.withLock { s in s.slots[made.member.key]?.lastStored = made.date }
        metrics.built(rule: rule.name)
        logger.debug("history dictionary built", metadata: [
            "rule": "\(rule.name)", "group": "\(made.member.key.group)", "bytes": "\(made.bytes.count)",
            "hash": "\(made.dictionary.hash.hex)"])
    }

    /// Writes `made` to the store (durable: fsync); on failure logs it, counts it and lets the
    /// group's next content build again. Returns whether it stored.
    @discardableResult
    private func persist(_ made: Made) -> Bool {
        do {
            _ = try store.put(made.bytes, description: made.description, now: made.date)
            return true
        } catch {
            failed(made.member.key, error)
            return false
        }
    }

    private func failed(_ key: HistoryDictionaryIndex.GroupKey, _ error: any Error) {
        metrics.skipped(rule: rule.name, reason: "failed")
        state.withLock { s in s.slots[key]?.lastBuild = nil }
        logger.error("cannot build or store history dictionary (the group builds again with its next content)",
                     metadata: ["rule": "\(rule.name)", "group": "\(key.group)", "error": "\(error)"])
    }

    /// Charges `elapsed` of a build of `key` to the budget; `done`: the build (store write included)
    /// is over, the group may build again.
    private func charge(_ key: HistoryDictionaryIndex.GroupKey, _ elapsed: Duration, done: Bool = true) {
        let now = clock()
        state.withLock { s in
            s.budget.charge(elapsed, at: now)
            if done { s.slots[key]?.building = false }
        }
    }

    /// A group's first dictionary, on the request path: made, put in the library and published at
    /// once; its store write queued. Returns the published member.
    private func buildFirst(_ bodies: [[UInt8]], key: HistoryDictionaryIndex.GroupKey) -> HistoryDictionaryIndex.Member? {
        let start = ContinuousClock.now
        let made: Made?
        do { made = try make(bodies, key: key) } catch {
            failed(key, error)
            made = nil
        }
        guard let made else {
            charge(key, ContinuousClock.now - start)
            return nil
        }
        publish(made)
        charge(key, ContinuousClock.now - start, done: false)
        queue.async {
            // The durable write (an fsync, or a PostgreSQL round trip) is not build work: it is not
            // charged to the budget, so a slow disk cannot starve other groups' first dictionaries.
            self.persist(made)
            self.charge(key, .zero)
        }
        return made.member
    }

    /// Builds, stores and only then publishes one dictionary (on `queue`).
    private func build(_ bodies: [[UInt8]], key: HistoryDictionaryIndex.GroupKey) {
        let start = ContinuousClock.now
        defer { charge(key, ContinuousClock.now - start) }
        do {
            guard let made = try make(bodies, key: key) else { return }
            if persist(made) { publish(made) }
        } catch {
            failed(key, error)
        }
    }

    // MARK: Shared windows

    /// Queues `body` for `group`'s shared window (its last `windowBytes`, as a local window keeps),
    /// and an append if none is queued. Never blocks.
    private func share(_ body: [UInt8], group: HistoryGroupID) {
        guard !body.isEmpty else { return }
        let kept = body.count > settings.windowBytes ? Array(body.suffix(settings.windowBytes)) : body
        let (queued, schedule): (Bool, Bool) = state.withLock { s in
            guard s.pendingBytes + kept.count <= Self.maxPendingBytes else { return (false, false) }
            s.pending.append(HistoryWindowBody(group: group, bytes: kept))
            s.pendingBytes += kept.count
            defer { s.appendQueued = true }
            return (true, !s.appendQueued)
        }
        if !queued { metrics.windowBodiesDropped(rule: rule.name, reason: "backlog", count: 1) }
        if schedule { queue.async { self.appendShared() } }
    }

    /// On `queue`: appends every waiting body to the store's windows in one transaction, then builds
    /// the groups whose shared counters call for it.
    private func appendShared() {
        guard let shared = sharedWindows else { return }
        let batch: [HistoryWindowBody] = state.withLock { s in
            defer {
                s.pending = []
                s.pendingBytes = 0
                s.appendQueued = false
            }
            return s.pending
        }
        guard !batch.isEmpty else { return }
        let groups: [HistoryGroupID: HistoryGroupState]
        do {
            groups = try shared.appendHistory(batch, capacity: settings.windowBytes)
        } catch {
            metrics.windowBodiesDropped(rule: rule.name, reason: "failed", count: batch.count)
            let now = clock()
            let log: Bool = state.withLock { s in
                guard s.lastAppendWarning.map({ now.timeIntervalSince($0) >= Self.warningInterval || now < $0 }) ?? true else { return false }
                s.lastAppendWarning = now
                return true
            }
            if log {
                logger.error("cannot add response bodies to the shared history windows (dropped; logged at most once a minute)",
                             metadata: ["rule": "\(rule.name)", "bodies": "\(batch.count)", "error": "\(error)"])
            }
            return
        }
        var seen = Set<HistoryGroupID>()
        for body in batch where seen.insert(body.group).inserted {
            if let group = groups[body.group] { buildShared(body.group, group, in: shared) }
        }
    }

    /// On `queue`: builds `id`'s next dictionary from its shared window when its counters call for
    /// it, the budget allows and this instance gets the group's lease (re-checked under the lease:
    /// another instance may have just built).
    private func buildShared(_ id: HistoryGroupID, _ group: HistoryGroupState, in shared: any HistoryWindowStore) {
        let now = clock()
        guard !group.building, needsBuild(newBytes: group.newBytes, lastBuild: group.lastBuild, now: now) else { return }
        guard state.withLock({ $0.budget.allows(at: now) }) else {
            metrics.skipped(rule: rule.name, reason: "budget")
            return
        }
        let key = HistoryDictionaryIndex.GroupKey(rule: id.rule, group: id.group, partition: id.partition)
        let claim: HistoryBuildClaim
        do {
            guard let got = try shared.claimHistoryBuild(id, lease: Self.leaseSeconds) else { return }
            claim = got
        } catch {
            failed(key, error)
            return
        }
        var builtAt: Date?
        defer {
            do { try shared.finishHistoryBuild(claim, builtAt: builtAt) } catch {
                logger.warning("cannot release a history build lease (it lapses by itself)",
                               metadata: ["rule": "\(rule.name)", "group": "\(id.group)", "error": "\(error)"])
            }
        }
        guard needsBuild(newBytes: claim.state.newBytes, lastBuild: claim.state.lastBuild, now: now) else { return }
        let start = ContinuousClock.now
        do {
            guard let made = try make(claim.bodies, key: key, previous: .some(claim.state.lastBuild)) else { return }
            // A first dictionary's store write is not build work (as for a single instance).
            let making = ContinuousClock.now - start
            if persist(made) {
                publish(made)
                builtAt = made.date
            }
            let elapsed = claim.state.lastBuild == nil ? making : ContinuousClock.now - start
            state.withLock { $0.budget.charge(elapsed, at: clock()) }
        } catch {
            failed(key, error)
        }
    }

    /// Applies `maxGroups` and the idle limit (no content for `lifetimeSeconds`) to the shared
    /// windows (on `queue`, after the appends queued so far); windows dropped while active are
    /// reported as over capacity. Does nothing for windows in memory (``collect`` bounds those).
    public func housekeep() {
        guard let shared = sharedWindows else { return }
        queue.async { [self] in
            let now = clock(), idleBefore = now.addingTimeInterval(-Double(settings.lifetimeSeconds))
            let dropped: [Date]
            do {
                // Idle windows go without a word; the others were beyond maxGroups.
                dropped = try shared.pruneHistory(rule: rule.name, maxGroups: settings.maxGroups, idleBefore: idleBefore)
                    .filter { $0 >= idleBefore }
            } catch {
                logger.warning("cannot apply history window limits in the store", metadata: ["rule": "\(rule.name)", "error": "\(error)"])
                return
            }
            for _ in dropped { metrics.evicted(rule: rule.name) }
            let active = dropped.filter { now.timeIntervalSince($0) < Self.activityPeriod }.count
            guard active > 0 else { return }
            for _ in 0..<active { metrics.overCapacity(rule: rule.name) }
            let warn: Int? = state.withLock { s in
                s.droppedActive += active
                guard s.lastCapacityWarning.map({ now.timeIntervalSince($0) >= Self.warningInterval || now < $0 }) ?? true else { return nil }
                s.lastCapacityWarning = now
                defer { s.droppedActive = 0 }
                return s.droppedActive
            }
            if let warn { warnOverCapacity(dropped: warn) }
        }
    }

    /// Blocks until the builds, store writes and shared-window appends queued so far are done
    /// (tests, shutdown).
    public func waitForBuilds() { queue.sync {} }

    /// Windows tracked now.
    var groupCount: Int { state.withLock { $0.slots.count } }
}
