import DictionaryCodec
import DictionaryTransport
import Synchronization

/// Verified dictionaries from the store as `CompressionDictionary` objects, kept so that their
/// prepared forms (zstd CDict, brotli prepared dictionary — milliseconds per MB to build) are made
/// once and shared by every request.
///
/// Thread-safe. Holds at most `capacity` dictionaries (least recently used dropped first); the store
/// is the source of truth and re-verifies bytes whenever it loads them from disk.
///
/// Partitions: each loaded dictionary remembers the partition it was loaded or inserted for (nil =
/// shared) and is handed out only for that partition; any other partition's lookup goes to the store,
/// which answers by (partition, hash) — so a hash never reaches another partition through this cache.
public final class DictionaryLibrary: Sendable {
    private struct State {
        typealias Entry = (dictionary: CompressionDictionary, candidate: DictionaryCandidate, tick: UInt64, partition: String?)
        var loaded: [DictionaryHash: Entry] = [:]
        var tick: UInt64 = 0
        var generation: UInt64 = 0

        /// Marks the loaded `hash` as just used; its index, or nil when it is not loaded.
        mutating func markUsed(_ hash: DictionaryHash) -> Dictionary<DictionaryHash, Entry>.Index? {
            guard let i = loaded.index(forKey: hash) else { return nil }
            tick &+= 1
            loaded.values[i].tick = tick
            return i
        }
    }

    public let store: any DictionaryStore
    public let capacity: Int
    private let state = Mutex(State())

    public init(store: any DictionaryStore, capacity: Int = 128) {
        self.store = store
        self.capacity = capacity
    }

    /// The dictionary with `hash` and what negotiation needs to know about it; nil when the store
    /// does not hold a valid one.
    /// `partition` nil = the shared dictionaries; a partition id = that partition's only.
    public func lookup(_ hash: DictionaryHash, partition: String? = nil)
        -> (dictionary: CompressionDictionary, candidate: DictionaryCandidate)? {
        if let hit = state.withLock({ s -> (CompressionDictionary, DictionaryCandidate)? in
            guard let i = s.loaded.index(forKey: hash), s.loaded.values[i].partition == partition else { return nil }
            return s.markUsed(hash).map { (s.loaded.values[$0].dictionary, s.loaded.values[$0].candidate) }
        }) {
            return hit
        }
        guard let stored = store.get(hash, partition: partition), let candidate = stored.metadata.candidate(hash: hash) else {
            return nil
        }
        let dictionary = CompressionDictionary(bytes: stored.bytes)
        guard dictionary.hash == hash else { return nil }
        state.withLock { s in
            s.tick &+= 1
            s.generation &+= 1
            s.loaded[hash] = (dictionary, candidate, s.tick, partition)
            if s.loaded.count > capacity, let victim = s.loaded.min(by: { $0.value.tick < $1.value.tick }) {
                s.loaded.removeValue(forKey: victim.key)
            }
        }
        return (dictionary, candidate)
    }

    /// Adds a dictionary the caller just made (a live response, before the store has written it), so
    /// the next request can use it at once. The bytes are the caller's; `dictionary.hash` is their hash.
    /// `partition`: the partition it belongs to (nil = shared).
    public func insert(_ dictionary: CompressionDictionary, candidate: DictionaryCandidate, partition: String? = nil) {
        state.withLock { s in
            s.tick &+= 1
            s.generation &+= 1
            s.loaded[dictionary.hash] = (dictionary, candidate, s.tick, partition)
            if s.loaded.count > capacity, let victim = s.loaded.min(by: { $0.value.tick < $1.value.tick }) {
                s.loaded.removeValue(forKey: victim.key)
            }
        }
    }

    /// Marks a loaded dictionary as just used (its eviction recency), without handing it out: what a
    /// replayed response does for the dictionary its body was encoded against. False when it is not
    /// loaded.
    @discardableResult
    public func touch(_ hash: DictionaryHash, partition: String? = nil) -> Bool {
        state.withLock { s in
            guard let i = s.loaded.index(forKey: hash), s.loaded.values[i].partition == partition else { return false }
            return s.markUsed(hash) != nil
        }
    }

    /// Forgets a dictionary (e.g. after retention removed it from the store).
    public func forget(_ hash: DictionaryHash) {
        state.withLock { s in
            if s.loaded.removeValue(forKey: hash) != nil { s.generation &+= 1 }
        }
    }

    /// Changes whenever the set of loaded dictionaries changes (a load, an eviction, a `forget`);
    /// lookups that hit leave it alone. A decision remembered together with the generation it was made
    /// in still holds while the generation is unchanged — for hashes that were loaded then. (A hash
    /// that was unknown may become known through the store without a change here: never remember a
    /// decision made from a failed lookup.)
    public var generation: UInt64 { state.withLock { $0.generation } }
}
