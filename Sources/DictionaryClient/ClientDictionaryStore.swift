import DictionaryCodecTypes
import DictionaryTransportFields
import Foundation
import Locking

/// The client's dictionaries: metadata plus bytes, in memory or in a directory, partitioned by a
/// caller-given key, bounded by ``ClientStoreLimits``.
///
/// Where it lives is the app's choice: ``Location/memory``, or a directory — normally under the app's
/// caches directory (``Location/caches(_:)``), which the system may purge: the store then starts
/// empty, as after a logout.
///
/// On disk: `DIR/index.json` (every ``StoredDictionary``, rewritten atomically after each change) and
/// `DIR/bodies/<digest of the entry key>.dict`, each written atomically; bytes are re-hashed every time
/// they are loaded, and an entry whose bytes do not match is removed. Entries whose body file is
/// missing are dropped when the index is read. The directory is created with mode 0700, files 0600.
///
/// Thread-safety: every method may be called from any thread; one lock serialises them (file I/O
/// included — the store is not on a hot path). Two processes sharing one directory are not
/// coordinated: the last index written wins (each file is still whole).
public final class ClientDictionaryStore: Sendable {
    public enum Location: Sendable, Hashable {
        case memory
        case directory(String)

        /// `name` inside the user's caches directory (an app's `Library/Caches` on Apple platforms,
        /// `~/.cache` on Linux); nil when the system names none.
        public static func caches(_ name: String) -> Location? {
            guard let caches = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first else { return nil }
            return .directory(caches.appendingPathComponent(name, isDirectory: true).path)
        }
    }

    public let location: Location
    public let limits: ClientStoreLimits

    private struct State {
        var entries: [StoredDictionary.Key: StoredDictionary] = [:]
        var memoryBodies: [StoredDictionary.Key: [UInt8]] = [:]
    }
    private let state = Locked(State())

    /// Opens (or creates) the store. Throws ``DictionaryClientError/storage(_:)`` when the directory
    /// cannot be created. An unreadable or malformed index starts an empty store (the old files are
    /// overwritten on the next change).
    public init(location: Location, limits: ClientStoreLimits = ClientStoreLimits()) throws(DictionaryClientError) {
        self.location = location
        self.limits = limits
        guard case .directory(let dir) = location else { return }
        try ClientStoreFiles.makePrivateDirectory(dir)
        try ClientStoreFiles.makePrivateDirectory(dir + "/bodies")
        if let bytes = ClientStoreFiles.read(dir + "/index.json"),
           let list = try? Self.decoder.decode([StoredDictionary].self, from: Data(bytes)) {
            state.withLock { s in
                for entry in list where DictionaryHash(hex: entry.hashHex) != nil
                    && ClientStoreFiles.exists(bodyPath(entry.key)) {
                    s.entries[entry.key] = entry
                }
            }
        }
    }

    /// Every entry of `partition` (all partitions when nil), expired ones included.
    public func entries(partition: String? = nil) -> [StoredDictionary] {
        state.withLock { s in s.entries.values.filter { partition == nil || $0.partition == partition } }
            .sorted { ($0.partition, $0.origin, $0.match) < ($1.partition, $1.origin, $1.match) }
    }

    /// Adds or replaces the entry with `entry.key`, then evicts least recently used entries until the
    /// limits hold. Returns the entries evicted. Throws when the body alone exceeds the partition's
    /// share or a file cannot be written (the store is unchanged then).
    @discardableResult
    public func insert(_ entry: StoredDictionary, body: [UInt8]) throws(DictionaryClientError) -> [StoredDictionary] {
        guard body.count <= limits.partitionBytes else {
            throw .storage("dictionary of \(body.count) bytes exceeds the partition's share of \(limits.partitionBytes) bytes")
        }
        return try state.withLock { (s: inout State) -> Result<[StoredDictionary], DictionaryClientError> in
            do throws(DictionaryClientError) {
                if case .directory = location { try writePrivately(body, to: bodyPath(entry.key)) }
                else { s.memoryBodies[entry.key] = body }
                s.entries[entry.key] = entry
                let evicted = evict(&s, keeping: entry.key, partition: entry.partition)
                for gone in evicted { removeBody(&s, gone.key) }
                try persist(s)
                return .success(evicted)
            } catch { return .failure(error) }
        }.get()
    }

    /// The verified bytes of `entry`: re-hashed on every load. A mismatch or missing file removes the
    /// entry and throws ``DictionaryClientError/storedDictionaryCorrupt(expected:)``.
    public func dictionary(for entry: StoredDictionary) throws(DictionaryClientError) -> DictionaryBytes {
        try state.withLock { (s: inout State) -> Result<DictionaryBytes, DictionaryClientError> in
            let bytes: [UInt8]?
            switch location {
            case .memory: bytes = s.memoryBodies[entry.key]
            case .directory: bytes = ClientStoreFiles.read(bodyPath(entry.key))
            }
            if let bytes, let dictionary = DictionaryBytes(bytes, expectedHash: entry.hash) {
                return .success(dictionary)
            }
            s.entries[entry.key] = nil
            removeBody(&s, entry.key)
            try? persist(s)
            return .failure(.storedDictionaryCorrupt(expected: entry.hash))
        }.get()
    }

    /// Marks `entry` as used now (LRU order). Not persisted immediately for memory stores; written with
    /// the index for directory stores.
    public func touch(_ key: StoredDictionary.Key, at date: Date) {
        state.withLock { s in
            guard s.entries[key] != nil else { return }
            s.entries[key]!.lastUsedAt = date
            try? persist(s)
        }
    }

    /// Removes expired entries; returns how many.
    @discardableResult
    public func removeExpired(now: Date) -> Int {
        state.withLock { s in
            let gone = s.entries.values.filter { $0.isExpired(at: now) }
            for entry in gone {
                s.entries[entry.key] = nil
                removeBody(&s, entry.key)
            }
            if !gone.isEmpty { try? persist(s) }
            return gone.count
        }
    }

    /// Removes every dictionary of `partition`, or of all partitions when nil.
    public func clear(partition: String? = nil) throws(DictionaryClientError) {
        try state.withLock { (s: inout State) -> Result<Void, DictionaryClientError> in
            for entry in s.entries.values where partition == nil || entry.partition == partition {
                s.entries[entry.key] = nil
                removeBody(&s, entry.key)
            }
            do throws(DictionaryClientError) { try persist(s) } catch { return .failure(error) }
            return .success(())
        }.get()
    }

    // MARK: - Internals (called with the lock held)

    private func evict(_ s: inout State, keeping key: StoredDictionary.Key, partition: String) -> [StoredDictionary] {
        var evicted: [StoredDictionary] = []
        func lru(_ filter: (StoredDictionary) -> Bool) -> StoredDictionary? {
            s.entries.values.filter { $0.key != key && filter($0) }
                .min { ($0.lastUsedAt, $0.hashHex) < ($1.lastUsedAt, $1.hashHex) }
        }
        func bytes(_ filter: (StoredDictionary) -> Bool) -> Int { s.entries.values.filter(filter).reduce(0) { $0 + $1.size } }
        while bytes({ $0.partition == partition }) > limits.partitionBytes, let victim = lru({ $0.partition == partition }) {
            s.entries[victim.key] = nil
            evicted.append(victim)
        }
        while s.entries.count > limits.maxCount || bytes({ _ in true }) > limits.byteBudget, let victim = lru({ _ in true }) {
            s.entries[victim.key] = nil
            evicted.append(victim)
        }
        return evicted
    }

    private func removeBody(_ s: inout State, _ key: StoredDictionary.Key) {
        switch location {
        case .memory: s.memoryBodies[key] = nil
        case .directory: ClientStoreFiles.remove(bodyPath(key))
        }
    }

    private func persist(_ s: State) throws(DictionaryClientError) {
        guard case .directory(let dir) = location else { return }
        let list = s.entries.values.sorted { $0.key.fileName < $1.key.fileName }
        guard let data = try? Self.encoder.encode(list) else { throw .storage("cannot encode the index") }
        try writePrivately([UInt8](data), to: dir + "/index.json")
    }

    private func writePrivately(_ bytes: [UInt8], to path: String) throws(DictionaryClientError) {
        try ClientStoreFiles.write(bytes, to: path)
    }

    private func bodyPath(_ key: StoredDictionary.Key) -> String {
        guard case .directory(let dir) = location else { return "" }
        return dir + "/bodies/" + key.fileName + ".dict"
    }

    private static var encoder: JSONEncoder {
        let e = JSONEncoder()
        e.dateEncodingStrategy = .secondsSince1970
        e.outputFormatting = [.prettyPrinted, .sortedKeys]
        return e
    }
    private static var decoder: JSONDecoder {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .secondsSince1970
        return d
    }
}
