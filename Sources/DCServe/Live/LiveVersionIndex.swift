import Foundation
import DictionaryCodec
import DictionaryTransport
import Locking

/// Which stored versions of live (proxied) responses a client may still name, per
/// (rule, partition, URL path): the last `upstreamVersions` of each, newest last, all of them under
/// one global byte budget (`maxBytes`, the store's) shared by every partition and a cap on their
/// number (`maxEntries`, the index's share of the memory budget), the least recently used version
/// (advertised or named by a client) evicted first. The byte budget counts each distinct version
/// once, whatever the number of partitions holding it, as the store keeps its bytes once.
///
/// Over budget: a version that is no longer the newest of its slot (its client got a newer one) goes
/// to the least recently used end at once, so it is evicted first. A version that is still the newest
/// of its slot and was used (advertised or named) within its lifetime (`keepSeconds`, what clients
/// were told they may use it for) is *protected*: ``offer(_:at:bytes:keepSeconds:now:)`` refuses a
/// new version rather than evict a protected one, so nothing is advertised that cannot be kept until
/// its client returns (when the working set exceeds the budget, evicting the least recently used
/// would evict every version before its client comes back: no deltas at all). ``refused`` counts them.
/// A slot's previous version is not evicted by the add that supersedes it (the same request names it):
/// the budget may be exceeded by that one version until the next add.
///
/// A hash this index has seen for a live rule is answered through it by (partition, hash), never by
/// hash alone: a client naming a version past the retention or evicted by the budget
/// (`pastRetention`), or another partition's version (`otherPartition`), gets `nil` — the same answer
/// as for an unknown hash. What the index no longer remembers (`notLive`) is looked up in the
/// library/store, which also answer by (partition, hash) only.
///
/// Cost: every operation is O(1) in the number of partitions and versions — hash maps and an
/// intrusive doubly linked LRU list keyed by (partition, hash); an `add` is O(upstreamVersions) for
/// its own slot, plus O(1) per eviction. ``examined`` counts the entries each operation touches, so
/// a test can check that no operation scans (no timing involved). Memory: one entry per retained
/// version plus at most `maxTombstones` remembered removals (oldest forgotten first).
///
/// Thread-safe (one `Locked`). Rebuilt at start-up from the store's records (rule, partition, source
/// path, last served), so deltas continue after a restart.
public final class LiveVersionIndex: Sendable {
    struct SlotKey: Hashable, Sendable {
        var rule: String
        var partition: String
        var path: String
    }

    struct Member: Hashable, Sendable {
        var partition: String
        var hash: DictionaryHash
    }

    /// A retained version: the slots retaining it, its size, its neighbours in the LRU list, when it
    /// was last used and how long after that its clients may name it (seconds since 1970; seconds).
    private struct Entry {
        var slots: [SlotKey]
        var bytes: Int
        var older: Member?
        var newer: Member?
        var lastUsed: Double = 0
        var keep: Double = 0
    }

    private struct State {
        /// Most dropped versions remembered for removal between two ``takeDropped()`` (beyond it, the
        /// store's own retention removes them).
        static let maxDropped = 1 << 20
        var slots: [SlotKey: [DictionaryHash]] = [:]
        var entries: [Member: Entry] = [:]
        var oldest: Member?
        var newest: Member?
        var totalBytes = 0
        /// Retained members per hash, any partition (for `otherPartition`).
        var retainedByHash: [DictionaryHash: Int] = [:]
        /// Removed members (count or budget), first removed first forgotten.
        var tombstones = Set<Member>()
        var tombstoneQueue: [Member] = []
        var tombstoneHead = 0
        var tombstonesByHash: [DictionaryHash: Int] = [:]
        var examined = 0
        /// New versions refused because only protected versions could have made room.
        var refused = 0
        /// Versions no longer retained, not yet handed to the store for removal (``takeDropped()``).
        var dropped: [Member] = []

        // MARK: LRU list

        mutating func unlink(_ m: Member) {
            guard let e = entries[m] else { return }
            examined += 1
            if let o = e.older { entries[o]?.newer = e.newer } else { oldest = e.newer }
            if let n = e.newer { entries[n]?.older = e.older } else { newest = e.older }
            entries[m]?.older = nil
            entries[m]?.newer = nil
        }

        mutating func linkNewest(_ m: Member) {
            entries[m]?.older = newest
            entries[m]?.newer = nil
            if let n = newest { entries[n]?.newer = m } else { oldest = m }
            newest = m
        }

        mutating func touch(_ m: Member) {
            guard newest != m else { return }
            unlink(m)
            linkNewest(m)
        }

        mutating func linkOldest(_ m: Member) {
            entries[m]?.newer = oldest
            entries[m]?.older = nil
            if let o = oldest { entries[o]?.older = m } else { newest = m }
            oldest = m
        }

        /// Whether `m` is the newest version of one of its slots (what its client names next).
        func isCurrent(_ m: Member, _ e: Entry) -> Bool {
            e.slots.contains { slots[$0]?.last == m.hash }
        }

        /// Whether evicting `m` would break a promise: it is current and within its lifetime.
        func isProtected(_ m: Member, now: Double) -> Bool {
            guard let e = entries[m] else { return false }
            return e.lastUsed + e.keep > now && isCurrent(m, e)
        }

        /// Whether a new version `member` (`bytes`; `fallen` leaving its slot by count, `superseded` its
        /// slot's previous newest) fits, evicting unprotected versions from the least recently used end:
        /// the walk ``add`` will make.
        func admits(_ member: Member, bytes: Int, fallen: [Member], superseded: Member?, maxBytes: Int?, maxEntries: Int?,
                    now: Double) -> Bool {
            var total = totalBytes + (retainedByHash[member.hash] == nil ? bytes : 0)
            var count = entries.count + 1
            var freedHashes: [DictionaryHash: Int] = [:]
            func free(_ m: Member) {
                guard let e = entries[m] else { return }
                count -= 1
                freedHashes[m.hash, default: 0] += 1
                if freedHashes[m.hash] == retainedByHash[m.hash] { total -= e.bytes }
            }
            for m in fallen where entries[m]?.slots.count == 1 { free(m) }
            func over() -> Bool { (maxBytes.map { total > $0 } ?? false) || (maxEntries.map { count > $0 } ?? false) }
            // The superseded version is current nowhere else (one slot): it goes to the evicted end first.
            let demoted = superseded.flatMap { m in entries[m]?.slots.count == 1 && !fallen.contains(m) ? m : nil }
            if let demoted, over() { free(demoted) }
            var cursor = oldest
            while over(), let victim = cursor {
                cursor = entries[victim]?.newer
                if victim == member || fallen.contains(victim) || victim == demoted { continue }
                if isProtected(victim, now: now) { return false }
                free(victim)
            }
            return true
        }


        /// Forgets a retained member entirely (from every slot); remembers it as a tombstone.
        mutating func drop(_ m: Member, maxTombstones: Int) {
            guard let e = entries[m] else { return }
            unlink(m)
            for slot in e.slots {
                examined += 1
                if var versions = slots[slot], let i = versions.firstIndex(of: m.hash) {
                    versions.remove(at: i)
                    slots[slot] = versions.isEmpty ? nil : versions
                }
            }
            entries[m] = nil
            let left = (retainedByHash[m.hash] ?? 1) - 1
            retainedByHash[m.hash] = left > 0 ? left : nil
            if left <= 0 { totalBytes -= e.bytes }  // the bytes go with the last partition holding them
            bury(m, maxTombstones: maxTombstones)
            if dropped.count < Self.maxDropped { dropped.append(m) }
        }

        mutating func bury(_ m: Member, maxTombstones: Int) {
            guard maxTombstones > 0, tombstones.insert(m).inserted else { return }
            tombstoneQueue.append(m)
            tombstonesByHash[m.hash, default: 0] += 1
            while tombstones.count > maxTombstones, tombstoneHead < tombstoneQueue.count {
                let old = tombstoneQueue[tombstoneHead]
                tombstoneHead += 1
                examined += 1
                if tombstones.remove(old) != nil {
                    let left = (tombstonesByHash[old.hash] ?? 1) - 1
                    tombstonesByHash[old.hash] = left > 0 ? left : nil
                }
            }
            if tombstoneHead > 1024 && tombstoneHead * 2 > tombstoneQueue.count {
                tombstoneQueue.removeFirst(tombstoneHead)
                tombstoneHead = 0
            }
        }

        /// A copy of this state in fresh storage: tables sized to their contents, each distinct string
        /// stored once. The copy is allocated while the heap is quiet, so it packs together instead of
        /// staying scattered among the pages traffic grew (each long-lived entry there keeps its page
        /// resident after the rest is returned to the system).
        func compacted() -> State {
            var strings: [String: String] = [:]
            func fresh(_ s: String) -> String {
                if let copy = strings[s] { return copy }
                var source = s
                let copy = source.withUTF8 { String(decoding: $0, as: UTF8.self) }
                strings[s] = copy
                return copy
            }
            func key(_ k: SlotKey) -> SlotKey { SlotKey(rule: fresh(k.rule), partition: fresh(k.partition), path: fresh(k.path)) }
            func member(_ m: Member) -> Member { Member(partition: fresh(m.partition), hash: m.hash) }
            func link(_ m: Member?) -> Member? { m.map(member) }
            var c = State()
            c.slots.reserveCapacity(slots.count)
            for (k, versions) in slots { c.slots[key(k)] = versions.map { $0 } }
            c.entries.reserveCapacity(entries.count)
            for (m, e) in entries {
                c.entries[member(m)] = Entry(slots: e.slots.map(key), bytes: e.bytes, older: link(e.older), newer: link(e.newer),
                                             lastUsed: e.lastUsed, keep: e.keep)
            }
            c.oldest = link(oldest)
            c.newest = link(newest)
            c.totalBytes = totalBytes
            c.retainedByHash = Dictionary(uniqueKeysWithValues: retainedByHash.map { ($0.key, $0.value) })
            c.tombstones.reserveCapacity(tombstones.count)
            for m in tombstones { c.tombstones.insert(member(m)) }
            c.tombstoneQueue = tombstoneQueue[tombstoneHead...].filter { tombstones.contains($0) }.map(member)
            c.tombstonesByHash = Dictionary(uniqueKeysWithValues: tombstonesByHash.map { ($0.key, $0.value) })
            c.examined = examined
            c.refused = refused
            c.dropped = dropped.map(member)
            return c
        }

        mutating func unbury(_ m: Member) {
            guard tombstones.remove(m) != nil else { return }
            let left = (tombstonesByHash[m.hash] ?? 1) - 1
            tombstonesByHash[m.hash] = left > 0 ? left : nil
            // Its queue slot stays; popping it later finds it gone from the set and skips it.
        }
    }

    private let state = Locked(State())
    /// rule name → versions kept per URL (nil: unlimited).
    let limits: [String: Int?]
    /// The global byte budget of retained versions (nil: none).
    let maxBytes: Int?
    /// The most versions retained (nil: no cap).
    let maxEntries: Int?
    /// How many removed versions are remembered as such (then they read as `notLive`).
    let maxTombstones: Int

    init(limits: [String: Int?], maxBytes: Int? = nil, maxEntries: Int? = nil, maxTombstones: Int = 100_000) {
        self.limits = limits
        self.maxBytes = maxBytes
        self.maxEntries = maxEntries
        self.maxTombstones = maxTombstones
    }

    /// Records `hash` as the newest version at `key` like ``add(_:at:bytes:keepSeconds:now:)``, unless the
    /// budget is full of protected versions: then nothing changes, ``refused`` grows and false is
    /// returned (the caller does not advertise the version: no client could use it later).
    /// `keepSeconds`: how long clients may use the version after it is advertised.
    func offer(_ hash: DictionaryHash, at key: SlotKey, bytes: Int, keepSeconds: Double,
               now: Double = Date().timeIntervalSince1970) -> Bool {
        let limit = limits[key.rule] ?? nil
        let maxBytes = self.maxBytes, maxEntries = self.maxEntries
        let admitted = state.withLock { s -> Bool in
            let member = Member(partition: key.partition, hash: hash)
            guard s.entries[member] == nil, maxBytes != nil || maxEntries != nil else { return true }
            var versions = s.slots[key] ?? []
            let previous = versions.last.map { Member(partition: key.partition, hash: $0) }
            versions.removeAll { $0 == hash }
            versions.append(hash)
            let fallen = limit.map { Array(versions.prefix(max(0, versions.count - $0))) } ?? []
            if s.admits(member, bytes: bytes, fallen: fallen.map { Member(partition: key.partition, hash: $0) }, superseded: previous,
                        maxBytes: maxBytes, maxEntries: maxEntries, now: now) { return true }
            s.refused += 1
            return false
        }
        guard admitted else { return false }
        add(hash, at: key, bytes: bytes, keepSeconds: keepSeconds, now: now)
        return true
    }

    /// Records `hash` (of `bytes` bytes) as the newest version at `key` and the most recently used;
    /// returns the (partition, hash) pairs no longer retained: fallen out of their slot's count, or
    /// evicted (least recently used first) to bring the total under `maxBytes`. The version just added
    /// is never evicted by its own `add`.
    /// Over budget it evicts unprotected versions only (see the type's comment); with only protected
    /// ones left it stays over budget (``offer`` checks first). `keepSeconds` and `now` (seconds since
    /// 1970): the version's lifetime and when it was used.
    @discardableResult
    func add(_ hash: DictionaryHash, at key: SlotKey, bytes: Int = 0, keepSeconds: Double = 0,
             now: Double = Date().timeIntervalSince1970) -> [Member] {
        let limit = limits[key.rule] ?? nil
        let maxTombstones = self.maxTombstones, maxBytes = self.maxBytes, maxEntries = self.maxEntries
        return state.withLock { s -> [Member] in
            let member = Member(partition: key.partition, hash: hash)
            var versions = s.slots[key] ?? []
            var removed: [Member] = []
            if versions.last == hash {
                s.touch(member)
                s.entries[member]?.lastUsed = now
                return []
            }
            let previous = versions.last
            if let i = versions.firstIndex(of: hash) {
                versions.remove(at: i)  // the same bytes again: they become the newest
            }
            versions.append(hash)
            if s.entries[member] == nil {
                s.entries[member] = Entry(slots: [key], bytes: bytes)
                s.linkNewest(member)
                // Identical bytes held by several partitions (the same feed for every user) are stored
                // once: counted once, with the first partition retaining them.
                if s.retainedByHash[hash] == nil { s.totalBytes += bytes }
                s.retainedByHash[hash, default: 0] += 1
                s.unbury(member)
            } else {
                if !(s.entries[member]!.slots.contains(key)) { s.entries[member]!.slots.append(key) }
                s.touch(member)
            }
            s.entries[member]?.lastUsed = now
            let keep = max(s.entries[member]?.keep ?? 0, keepSeconds)
            s.entries[member]?.keep = keep
            s.examined += 1
            var fallen: [DictionaryHash] = []
            if let limit {
                while versions.count > limit { fallen.append(versions.removeFirst()) }
            }
            s.slots[key] = versions
            // The slot's previous newest is superseded: its client got this one. It goes first.
            if let previous, previous != hash, versions.contains(previous) {
                let m = Member(partition: key.partition, hash: previous)
                if let e = s.entries[m], !s.isCurrent(m, e) {
                    s.unlink(m)
                    s.linkOldest(m)
                }
            }
            for old in fallen {
                let m = Member(partition: key.partition, hash: old)
                guard var e = s.entries[m] else { continue }
                e.slots.removeAll { $0 == key }
                if e.slots.isEmpty {
                    s.drop(m, maxTombstones: maxTombstones)
                    removed.append(m)
                } else {
                    s.entries[m]?.slots = e.slots
                }
            }
            func over() -> Bool {
                (maxBytes.map { s.totalBytes > $0 } ?? false) || (maxEntries.map { s.entries.count > $0 } ?? false)
            }
            // The slot's previous version stays until the next add: the request that brought this version
            // names it (its delta is negotiated after the new version is recorded). So the budget may be
            // exceeded by that one version.
            let kept = previous.map { Member(partition: key.partition, hash: $0) }
            var cursor = s.oldest
            while over(), let victim = cursor, victim != member {
                cursor = s.entries[victim]?.newer
                if victim == kept { continue }
                if s.isProtected(victim, now: now) { break }
                s.drop(victim, maxTombstones: maxTombstones)
                removed.append(victim)
            }
            return removed
        }
    }

    /// What a client in `partition` naming `hash` gets.
    enum Verdict: Equatable {
        /// Not a live version this index remembers: the lookup by (partition, hash) in the library and
        /// store applies.
        case notLive
        /// Stored for this partition and still retained: usable (and now the most recently used).
        case allowed
        /// Another partition's version (never this one's): answered as if unknown.
        case otherPartition
        /// This partition's version, past the retention or evicted by the budget: answered as if unknown.
        case pastRetention
    }

    /// The verdict for `hash` named by a client in `partition`, O(1); an `allowed` version becomes the
    /// most recently used, unless a newer version of its URL has replaced it (then it stays first in
    /// line for eviction).
    func verdict(_ hash: DictionaryHash, partition: String, now: Double = Date().timeIntervalSince1970) -> Verdict {
        state.withLock { s -> Verdict in
            let member = Member(partition: partition, hash: hash)
            s.examined += 1
            if let e = s.entries[member] {
                // A superseded version stays at the evicted end: its client is given the newer one now.
                if s.isCurrent(member, e) { s.touch(member) }
                s.entries[member]?.lastUsed = now
                return .allowed
            }
            if s.tombstones.contains(member) { return .pastRetention }
            if s.retainedByHash[hash] != nil || s.tombstonesByHash[hash] != nil { return .otherPartition }
            return .notLive
        }
    }

    /// Whether (`partition`, `hash`) is retained, without marking it used.
    func retains(_ hash: DictionaryHash, partition: String) -> Bool {
        state.withLock { $0.entries[Member(partition: partition, hash: hash)] != nil }
    }

    /// Entries touched by all operations so far (a test's proof that nothing scans).
    var examined: Int { state.withLock { $0.examined } }
    /// Bytes of the retained versions, each distinct version once (as the store holds them).
    var totalBytes: Int { state.withLock { $0.totalBytes } }
    /// Number of retained (partition, hash) versions.
    var count: Int { state.withLock { $0.entries.count } }
    /// Number of remembered removals (at most `maxTombstones`).
    var tombstoneCount: Int { state.withLock { $0.tombstones.count } }
    /// The versions dropped (by count or budget) since the last call: for the store to remove them
    /// (their bytes would otherwise stay until the store's own retention, which could evict a version
    /// this index still keeps instead).
    func takeDropped() -> [Member] {
        state.withLock { s in
            defer { s.dropped = [] }
            return s.dropped
        }
    }

    /// Moves the index into fresh, exactly sized storage (``State/compacted()``): for idle time, when
    /// the memory traffic used is given back. O(entries), under the index's lock.
    func compact() {
        state.withLock { s in s = s.compacted() }
    }

    /// New versions ``offer`` refused so far.
    var refused: Int { state.withLock { $0.refused } }

    /// Rebuilds the index from the store's records of live rules (least recently served first, so
    /// the budget evicts the same ones the store would).
    /// Each URL's versions are added in the order they were first served (a version's `lastServed`
    /// moves when a client names it, after its successor was stored: that order would make the older
    /// version the newest), then their recency is set in `lastServed` order.
    func load(from store: any DictionaryStore) {
        let records = store.records.filter { m in m.rule.map { limits.keys.contains($0) } ?? false }
        for m in records.sorted(by: { ($0.firstServed, $0.hash) < ($1.firstServed, $1.hash) }) {
            guard let hash = DictionaryHash(hex: Substring(m.hash)) else { continue }
            learn(m, hash: hash)
        }
        state.withLock { s in
            for m in records.sorted(by: { ($0.lastServed, $0.firstServed, $0.hash) < ($1.lastServed, $1.firstServed, $1.hash) }) {
                guard let hash = DictionaryHash(hex: Substring(m.hash)) else { continue }
                let member = Member(partition: m.partition ?? "", hash: hash)
                guard let e = s.entries[member] else { continue }
                if s.isCurrent(member, e) { s.touch(member) }
                s.entries[member]?.lastUsed = m.lastServed.timeIntervalSince1970
            }
        }
    }

    /// Adds a version stored by another instance (learnt from the shared store), unless this index
    /// already retains it or removed it (its own `add` came first: the order of slots stays this one's).
    func learn(_ m: DictionaryMetadata) {
        guard let rule = m.rule, limits.keys.contains(rule), let hash = DictionaryHash(hex: Substring(m.hash)) else { return }
        let member = Member(partition: m.partition ?? "", hash: hash)
        guard state.withLock({ $0.entries[member] == nil && !$0.tombstones.contains(member) }) else { return }
        learn(m, hash: hash)
    }

    private func learn(_ m: DictionaryMetadata, hash: DictionaryHash) {
        add(hash, at: SlotKey(rule: m.rule ?? "", partition: m.partition ?? "", path: m.sourcePath ?? ""), bytes: m.byteSize,
            keepSeconds: Double(m.maxAge ?? 0), now: m.lastServed.timeIntervalSince1970)
    }
}
