import DictionaryCodec
import Locking

/// Identifies one encoded variant of a resource: (resource bytes hash, dictionary hash or none,
/// coding). The level is a property of the cached entry: one entry per key holds the best level
/// produced so far.
public struct VariantKey: Hashable, Sendable {
    /// SHA-256 of the identity body.
    public var resource: DictionaryHash
    /// The dictionary for dcb/dcz; nil for plain codings.
    public var dictionary: DictionaryHash?
    public var coding: ContentCoding

    public init(resource: DictionaryHash, dictionary: DictionaryHash? = nil, coding: ContentCoding) {
        self.resource = resource
        self.dictionary = dictionary
        self.coding = coding
    }
}

/// An encoded body and the compression level that produced it (higher = better compression).
public struct CachedVariant: Sendable, Equatable {
    public let bytes: [UInt8]
    public let level: Int

    public init(bytes: [UInt8], level: Int) {
        self.bytes = bytes
        self.level = level
    }
}

/// Counters for metrics. `bytes`/`entries` are current totals; the others only grow.
public struct VariantCacheStats: Sendable, Equatable {
    public var hits = 0
    public var misses = 0
    public var insertions = 0
    /// Inserts that replaced a lower-level entry (fast encode upgraded to best).
    public var upgrades = 0
    /// Inserts ignored because an entry of the same or a better level was present, or too large.
    public var rejected = 0
    public var evictions = 0
    public var bytes = 0
    public var entries = 0
}

/// Encoded response bodies under a byte budget, least recently used evicted first.
///
/// A miss can be filled with a fast-level encode now and upgraded later: ``insert(_:for:)`` keeps an
/// entry only if no entry of the same or a better level exists. Bodies larger than the whole budget
/// are not cached. Thread-safe: one lock (`Locked`) around an O(1) LRU (hash map + index-linked list); the
/// bytes are shared copy-on-write, never copied on lookup.
public final class VariantCache: Sendable {
    public let budget: Int
    private let state: Locked<LRU>

    public init(budget: Int) {
        self.budget = budget
        state = Locked(LRU())
    }

    /// The cached variant for `key` (the best level present), counting a hit or a miss.
    public func bestEntry(for key: VariantKey) -> CachedVariant? {
        state.withLock { lru in
            guard let slot = lru.slotByKey[key] else { lru.stats.misses += 1; return nil }
            lru.stats.hits += 1
            lru.moveToFront(slot)
            return lru.slots[slot].value
        }
    }

    /// Convenience for ``bestEntry(for:)``.
    public func bestEntry(resource: DictionaryHash, dictionary: DictionaryHash?, coding: ContentCoding) -> CachedVariant? {
        bestEntry(for: VariantKey(resource: resource, dictionary: dictionary, coding: coding))
    }

    /// Stores `variant` unless an entry of the same or a better level exists. Returns true when stored.
    @discardableResult
    public func insert(_ variant: CachedVariant, for key: VariantKey) -> Bool {
        state.withLock { lru in
            guard variant.bytes.count <= budget else { lru.stats.rejected += 1; return false }
            if let slot = lru.slotByKey[key] {
                guard variant.level > lru.slots[slot].value!.level else { lru.stats.rejected += 1; return false }
                lru.stats.bytes += variant.bytes.count - lru.slots[slot].value!.bytes.count
                lru.slots[slot].value = variant
                lru.generation &+= 1
                lru.moveToFront(slot)
                lru.stats.upgrades += 1
            } else {
                lru.pushFront(key, variant)
                lru.stats.bytes += variant.bytes.count
                lru.stats.entries += 1
            }
            lru.stats.insertions += 1
            while lru.stats.bytes > budget, let tail = lru.tail {
                lru.remove(tail)
                lru.stats.evictions += 1
            }
            return lru.slotByKey[key] != nil
        }
    }

    /// Removes every variant of `resource` (e.g. when the file changed).
    public func removeAll(resource: DictionaryHash) {
        state.withLock { lru in
            for (key, slot) in lru.slotByKey where key.resource == resource { lru.remove(slot) }
        }
    }

    /// A snapshot of the counters.
    public var stats: VariantCacheStats { state.withLock { $0.stats } }

    /// Changes whenever the cache's contents change (an insert, upgrade, eviction or removal); lookups
    /// leave it alone. Whoever remembers a decision made from cache lookups can compare generations
    /// to know the lookups would still give the same answers.
    public var generation: UInt64 { state.withLock { $0.generation } }

    /// Index-linked doubly linked list + map; head = most recently used.
    private struct LRU {
        struct Slot {
            var key: VariantKey?
            var value: CachedVariant?
            var prev = -1
            var next = -1
        }

        var slots: [Slot] = []
        var free: [Int] = []
        var slotByKey: [VariantKey: Int] = [:]
        var head: Int? = nil
        var tail: Int? = nil
        var stats = VariantCacheStats()
        /// Bumped by every change of contents (see ``VariantCache/generation``).
        var generation: UInt64 = 0

        mutating func unlink(_ i: Int) {
            let (p, n) = (slots[i].prev, slots[i].next)
            if p >= 0 { slots[p].next = n } else { head = n >= 0 ? n : nil }
            if n >= 0 { slots[n].prev = p } else { tail = p >= 0 ? p : nil }
            slots[i].prev = -1
            slots[i].next = -1
        }

        mutating func linkFront(_ i: Int) {
            slots[i].prev = -1
            slots[i].next = head ?? -1
            if let h = head { slots[h].prev = i }
            head = i
            if tail == nil { tail = i }
        }

        mutating func moveToFront(_ i: Int) {
            guard head != i else { return }
            unlink(i)
            linkFront(i)
        }

        mutating func pushFront(_ key: VariantKey, _ value: CachedVariant) {
            let i: Int
            if let reused = free.popLast() { i = reused; slots[i] = Slot(key: key, value: value) } else {
                i = slots.count
                slots.append(Slot(key: key, value: value))
            }
            slotByKey[key] = i
            generation &+= 1
            linkFront(i)
        }

        mutating func remove(_ i: Int) {
            generation &+= 1
            unlink(i)
            if let key = slots[i].key { slotByKey[key] = nil }
            stats.bytes -= slots[i].value?.bytes.count ?? 0
            stats.entries -= 1
            slots[i] = Slot()
            free.append(i)
        }
    }
}
