import DictionaryCodec
import DictionaryTransport
import HTTPCore
import Synchronization

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
        var loaded: [Key: Entry] = [:]
        var tick: UInt64 = 0
        var generation: UInt64 = 0

        /// Marks the loaded `key` as just used; its index, or nil when it is not loaded.
        mutating func markUsed(_ key: Key) -> Dictionary<Key, Entry>.Index? {
            guard let i = loaded.index(forKey: key) else { return nil }
            tick &+= 1
            loaded.values[i].tick = tick
            return i
        }

        /// The dictionary object loaded for `hash` under any partition (to share its prepared forms).
        func anyLoaded(_ hash: DictionaryHash) -> CompressionDictionary? {
            loaded.first { $0.key.hash == hash }?.value.dictionary
        }

        /// Bytes plus prepared forms of the loaded dictionaries, each shared object once.
        var footprint: Int {
            var seen = Set<DictionaryHash>()
            return loaded.reduce(0) { sum, entry in seen.insert(entry.key.hash).inserted ? sum + entry.value.dictionary.memoryFootprint : sum }
        }

        /// Adds `entry` under `key`, then drops least recently used dictionaries (never the one just
        /// added) while more than `capacity` are loaded or their footprint exceeds `maxBytes`.
        mutating func add(_ key: Key, _ dictionary: CompressionDictionary, _ candidate: DictionaryCandidate,
                          capacity: Int, maxBytes: Int) {
            tick &+= 1
            generation &+= 1
            loaded[key] = (dictionary, candidate, tick)
            var footprint = self.footprint
            // The entry just added has the highest tick, so it is never the least recently used.
            while loaded.count > 1 && (loaded.count > capacity || footprint > maxBytes),
                  let victim = loaded.min(by: { $0.value.tick < $1.value.tick }), victim.key != key {
                loaded.removeValue(forKey: victim.key)
                // A shared dictionary's memory goes with the last partition holding it.
                if anyLoaded(victim.key.hash) == nil { footprint -= victim.value.dictionary.memoryFootprint }
            }
        }
    }

    public let store: any DictionaryStore
    public let capacity: Int
    public let maxBytes: Int
    private let state = Mutex(State())
    /// Where a caller on an event loop runs work that needs ``needsStoreRead(_:partition:)``'s store
    /// read: threads of their own (at most `storeReadThreads` at once; more work waits its turn without
    /// a thread), so a slow store never holds up Dispatch's shared worker pool.
    let storeReads: BlockingWorkThreads

    /// Default of `store.readThreads`.
    public static let defaultStoreReadThreads = 8

    /// Default memory budget: 512 MiB of dictionaries and their prepared forms
    /// (`compression.dictionaryMemoryBytes`).
    public static let defaultMaxBytes = 512 << 20

    public init(store: any DictionaryStore, capacity: Int = 128, maxBytes: Int = DictionaryLibrary.defaultMaxBytes,
                storeReadThreads: Int = DictionaryLibrary.defaultStoreReadThreads) {
        self.store = store
        self.capacity = capacity
        self.maxBytes = maxBytes
        storeReads = BlockingWorkThreads(name: "dcserve.store-read", maxThreads: storeReadThreads)
    }

    /// Dictionaries loaded now, and their footprint (bytes plus prepared forms).
    public var usage: (count: Int, bytes: Int) {
        state.withLock { ($0.loaded.count, $0.footprint) }
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
        let dictionary = prepared ?? CompressionDictionary(bytes: stored.bytes)
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

    /// Forgets the dictionary of (`partition`, `hash`) (e.g. after retention removed it from the store).
    public func forget(_ hash: DictionaryHash, partition: String?) {
        state.withLock { s in
            if s.loaded.removeValue(forKey: Key(hash: hash, partition: partition)) != nil { s.generation &+= 1 }
        }
    }

    /// Changes whenever the set of loaded dictionaries changes (a load, an eviction, a `forget`);
    /// lookups that hit leave it alone. A decision remembered together with the generation it was made
    /// in still holds while the generation is unchanged — for hashes that were loaded then. (A hash
    /// that was unknown may become known through the store without a change here: never remember a
    /// decision made from a failed lookup.)
    public var generation: UInt64 { state.withLock { $0.generation } }
}
