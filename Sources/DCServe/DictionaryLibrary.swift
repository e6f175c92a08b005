import DictionaryCodec
import DictionaryTransport
import HTTPCore
import Locking

/// Verified dictionaries from the store as `CompressionDictionary` objects, kept so that their
/// prepared forms (zstd CDict, brotli prepared dictionary — milliseconds per MB to build) are made
/// once and shared by every request.
///
/// Thread-safe. Holds at most `capacity` dictionaries and about `maxBytes` of memory (bytes plus
/// prepared forms, which can be 4–32× the dictionary: a 1 MiB dictionary's zstd level-19 CDict is
/// 32 MiB), least recently used dropped first; the budget is checked whenever a dictionary is added,
/// so forms prepared since then may exceed it until the next addition. The newest dictionary is
/// always kept. The store is the source of truth and re-verifies bytes whenever it loads them from disk.
///
/// Partitions: each loaded dictionary is kept under (hash, partition it was loaded or inserted for;
/// nil = shared) and handed out only for that pair; any other partition's lookup goes to the store,
/// which answers by (partition, hash) — so a hash never reaches another partition through this cache.
/// Identical bytes loaded for several partitions share one `CompressionDictionary` (and its prepared
/// forms): the bytes are content-addressed.
public final class DictionaryLibrary: Sendable {
    /// A loaded dictionary's key.
    struct Key: Hashable {
        let hash: DictionaryHash
        let partition: String?
    }

    private struct State {
        typealias Entry = (dictionary: CompressionDictionary, candidate: DictionaryCandidate, tick: UInt64)
        /// A loaded object, shared by the partitions holding the same bytes: how many keys hold it and
        /// the footprint counted for it in `footprint`.
        struct Object {
            var dictionary: CompressionDictionary
            var keys: Int
            var accounted: Int
        }
        var loaded: [Key: Entry] = [:]
        var objects: [DictionaryHash: Object] = [:]
        /// Bytes plus prepared forms of the loaded objects, each once, as last measured (at an add,
        /// for the objects handed out since the one before).
        var footprint = 0
        /// Keys in the order they were last used, oldest first; an element whose tick is not its
        /// key's current tick is stale and skipped (so marking a key used is an append, not a move).
        var recency: [(tick: UInt64, key: Key)] = []
        var recencyHead = 0
        /// Objects handed out since their footprint was last measured.
        var handedOut = Set<DictionaryHash>()
        var tick: UInt64 = 0
        var generation: UInt64 = 0

        /// Marks the loaded `key` as just used; its index, or nil when it is not loaded.
        mutating func markUsed(_ key: Key) -> Dictionary<Key, Entry>.Index? {
            guard let i = loaded.index(forKey: key) else { return nil }
            tick &+= 1
            loaded.values[i].tick = tick
            recency.append((tick, key))
            handedOut.insert(key.hash)
            compactRecency()
            return i
        }

        /// Counts the footprints of the objects handed out since the last measure (their prepared
        /// forms are built by the requests that got them).
        mutating func remeasureHandedOut() {
            for hash in handedOut { remeasure(hash) }
            handedOut.removeAll(keepingCapacity: true)
        }

        /// The dictionary object loaded for `hash` under any partition (to share its prepared forms).
        func anyLoaded(_ hash: DictionaryHash) -> CompressionDictionary? { objects[hash]?.dictionary }

        /// Counts the current footprint of the object of `hash` (prepared forms are built after a load).
        mutating func remeasure(_ hash: DictionaryHash) {
            guard let object = objects[hash] else { return }
            let now = object.dictionary.memoryFootprint
            footprint += now - object.accounted
            objects[hash]?.accounted = now
        }

        mutating func remove(_ key: Key) -> Bool {
            guard loaded.removeValue(forKey: key) != nil else { return false }
            if let object = objects[key.hash] {
                if object.keys <= 1 {
                    objects[key.hash] = nil
                    footprint -= object.accounted  // a shared dictionary's memory goes with its last partition
                } else {
                    objects[key.hash]?.keys -= 1
                }
            }
            return true
        }

        /// Drops stale recency elements once they are most of the list (amortised O(1) per use).
        mutating func compactRecency() {
            guard recency.count > 1024, recency.count > 4 * loaded.count else { return }
            recency = recency[recencyHead...].filter { loaded[$0.key]?.tick == $0.tick }
            recencyHead = 0
        }

        /// Adds `entry` under `key`, then drops least recently used dictionaries (never the one just
        /// added) while more than `capacity` are loaded or their footprint exceeds `maxBytes`.
        mutating func add(_ key: Key, _ dictionary: CompressionDictionary, _ candidate: DictionaryCandidate,
                          capacity: Int, maxBytes: Int) {
            tick &+= 1
            generation &+= 1
            if loaded.updateValue((dictionary, candidate, tick), forKey: key) == nil {
                if objects[key.hash] == nil {
                    objects[key.hash] = Object(dictionary: dictionary, keys: 1, accounted: 0)
                } else {
                    objects[key.hash]?.keys += 1
                }
            }
            recency.append((tick, key))
            // The objects handed out before (their requests built prepared forms since), then this one
            // as it is now; it is being handed out, so it is measured again at the next add.
            remeasureHandedOut()
            remeasure(key.hash)
            handedOut.insert(key.hash)
            // The entry just added has the highest tick, so it is never the least recently used.
            while loaded.count > 1 && (loaded.count > capacity || footprint > maxBytes), recencyHead < recency.count {
                let (t, victim) = recency[recencyHead]
                recencyHead += 1
                if victim == key && t == tick {  // the newest: everything older was looked at
                    recencyHead -= 1
                    break
                }
                guard loaded[victim]?.tick == t else { continue }
                _ = remove(victim)
            }
            if recencyHead > 0 && recencyHead * 2 > recency.count {
                recency.removeFirst(recencyHead)
                recencyHead = 0
            }
            compactRecency()
        }
    }

    public let store: any DictionaryStore
    public let capacity: Int
    public let maxBytes: Int
    private let state = Locked(State())
    /// Where a caller on an event loop runs work that needs ``needsStoreRead(_:partition:)``'s store
    /// read: threads of their own (at most `storeReadThreads` at once; more work waits its turn without
    /// a thread), so a slow store never holds up Dispatch's shared worker pool.
    let storeReads: BlockingWorkThreads

    /// Default most dictionaries loaded at once: high enough that the byte budget decides (a live version
    /// waiting for its store commit stays loaded while its user's next request may come).
    public static let defaultCapacity = 4096

    /// Default of `store.readThreads`.
    public static let defaultStoreReadThreads = 8

    /// Default memory budget of a library built without one (an application passes its share of
    /// `server.memoryBytes`, ``MemoryBudget``): 512 MiB of dictionaries and their prepared forms.
    public static let defaultMaxBytes = 512 << 20

    public init(store: any DictionaryStore, capacity: Int = DictionaryLibrary.defaultCapacity, maxBytes: Int = DictionaryLibrary.defaultMaxBytes,
                storeReadThreads: Int = DictionaryLibrary.defaultStoreReadThreads) {
        self.store = store
        self.capacity = capacity
        self.maxBytes = maxBytes
        storeReads = BlockingWorkThreads(name: "dcserve.store-read", maxThreads: storeReadThreads)
    }

    /// Dictionaries loaded now, and their footprint (bytes plus prepared forms).
    public var usage: (count: Int, bytes: Int) {
        state.withLock { s in
            s.remeasureHandedOut()
            return (s.loaded.count, s.footprint)
        }
    }

    /// The dictionary with `hash` and what negotiation needs to know about it; nil when the store
    /// does not hold a valid one.
    /// `partition` nil = the shared dictionaries; a partition id = that partition's only.
    public func lookup(_ hash: DictionaryHash, partition: String? = nil)
        -> (dictionary: CompressionDictionary, candidate: DictionaryCandidate)? {
        let key = Key(hash: hash, partition: partition)
        if let hit = state.withLock({ s -> (CompressionDictionary, DictionaryCandidate)? in
            s.markUsed(key).map { (s.loaded.values[$0].dictionary, s.loaded.values[$0].candidate) }
        }) {
            return hit
        }
        guard let stored = store.get(hash, partition: partition), let candidate = stored.metadata.candidate(hash: hash) else {
            return nil
        }
        let prepared = state.withLock { $0.anyLoaded(hash) }
        // The store verified the bytes against `hash`. One user's dictionary serves that user's next
        // request or two: dcz references it as a prefix rather than building a CDict.
        let dictionary = prepared ?? CompressionDictionary(bytes: stored.bytes, knownHash: hash, prefersPrefix: partition != nil)
        guard dictionary.hash == hash else { return nil }
        state.withLock { s in s.add(key, dictionary, candidate, capacity: capacity, maxBytes: maxBytes) }
        return (dictionary, candidate)
    }

    /// Whether ``lookup(_:partition:)`` would read the store for (`partition`, `hash`) now: the store
    /// holds that pair and it is not loaded. Cheap (a lock here and the store's in-memory records), so
    /// a caller on an event loop can move such a lookup — a disk read and SHA-256, or a PostgreSQL
    /// round trip — to a worker queue first.
    public func needsStoreRead(_ hash: DictionaryHash, partition: String?) -> Bool {
        let loaded = state.withLock { $0.loaded.index(forKey: Key(hash: hash, partition: partition)) != nil }
        return !loaded && store.metadata(hash, partition: partition) != nil
    }

    /// Whether `hash` is loaded now (under any partition).
    public func isLoaded(_ hash: DictionaryHash) -> Bool { state.withLock { $0.anyLoaded(hash) != nil } }

    /// Adds a dictionary the caller just made (a live response, before the store has written it), so
    /// the next request can use it at once. The bytes are the caller's; `dictionary.hash` is their hash.
    /// `partition`: the partition it belongs to (nil = shared).
    public func insert(_ dictionary: CompressionDictionary, candidate: DictionaryCandidate, partition: String? = nil) {
        state.withLock { s in
            let shared = s.anyLoaded(dictionary.hash) ?? dictionary
            s.add(Key(hash: dictionary.hash, partition: partition), shared, candidate, capacity: capacity, maxBytes: maxBytes)
        }
    }

    /// Marks a loaded dictionary as just used (its eviction recency), without handing it out: what a
    /// replayed response does for the dictionary its body was encoded against. False when it is not
    /// loaded.
    @discardableResult
    public func touch(_ hash: DictionaryHash, partition: String? = nil) -> Bool {
        state.withLock { $0.markUsed(Key(hash: hash, partition: partition)) != nil }
    }

    /// Drops every loaded dictionary (when traffic stops): each is reloaded from the store when named.
    public func releaseAll() {
        state.withLock { s in
            guard !s.loaded.isEmpty else { return }
            s = State(generation: s.generation &+ 1)
        }
    }

    /// Forgets the dictionary of (`partition`, `hash`) (e.g. after retention removed it from the store).
    public func forget(_ hash: DictionaryHash, partition: String?) {
        state.withLock { s in
            if s.remove(Key(hash: hash, partition: partition)) { s.generation &+= 1 }
        }
    }

    /// Changes whenever the set of loaded dictionaries changes (a load, an eviction, a `forget`);
    /// lookups that hit leave it alone. A decision remembered together with the generation it was made
    /// in still holds while the generation is unchanged — for hashes that were loaded then. (A hash
    /// that was unknown may become known through the store without a change here: never remember a
    /// decision made from a failed lookup.)
    public var generation: UInt64 { state.withLock { $0.generation } }
}
