import DictionaryCodec
import Foundation
import Logging


/// A ``DictionaryStore`` in one local directory.
///
/// Layout: `<dir>/<hex sha-256>` holds the dictionary bytes, `<dir>/<hex>.json` its
/// ``DictionaryMetadata``; `<dir>/quarantine/` receives files whose bytes do not match their name;
/// `<dir>/.tmp-<UUID>` are in-flight writes; `<dir>/.dcserve-store` marks the directory as a store.
/// Writes are atomic and durable (``AtomicFile``): the record is written before the bytes, so a crash
/// leaves at worst a record without bytes, removed at the next start.
///
/// Ownership: the store removes or moves only files it wrote — a `<hex>` file whose `<hex>.json` is a
/// record of ours naming that hash, such a record, and `.tmp-<UUID>` files. Anything else in the
/// directory (other files, a `<hex>` without our record, a `<hex>.json` that is not our record) is
/// left alone, never read as a dictionary, and warned about once. Symlinks are never followed
/// (`O_NOFOLLOW`), and a file's size is checked against `maxDictionaryBytes` before it is read.
///
/// Several processes may share the directory (one volume, several instances): a `get` for a hash
/// missing from the index looks for it on disk and adopts it when its record and verified bytes are
/// there. At `init` the directory is scanned: stray temporary files and orphan records are removed, every
/// dictionary is hashed and quarantined if its name does not match, and the in-memory index is built.
///
/// Every `get` that reads the disk re-verifies SHA-256; on mismatch both files go to `quarantine/`,
/// an error is logged and nil is returned. Loaded dictionaries stay in a memory cache bounded by
/// `cacheBudget` bytes (least recently used evicted; verified bytes in memory are trusted).
///
/// `recordServed` only updates memory; ``flush()`` writes the changed records (call it periodically
/// and at shutdown). ``prune(now:)`` applies ``DictionaryRetention``.
///
/// Thread-safety: all mutable state (index, cache, dirty set) lives behind one lock (`LockedState`); file I/O and
/// hashing run outside it, so concurrent requests only contend for short index updates. Safe to
/// share across tasks and threads (`Sendable`, Swift 6 strict concurrency).
public final class DirectoryDictionaryStore: DictionaryStore {
    public let directory: String
    public let retention: DictionaryRetention
    public let cacheBudget: Int
    /// The largest dictionary `put` accepts and the largest file read as one (larger files are never read).
    public let maxDictionaryBytes: Int
    private let logger: Logger
    /// Names of files the store does not own, warned about once each.
    private let warnedForeign = LockedState(Set<String>())

    /// The default for `maxDictionaryBytes`: the largest body Chromium registers as a dictionary (100 MiB).
    public static let defaultMaxDictionaryBytes = 100 << 20
    /// Name of the file marking a directory as a dictionary store.
    public static let markerName = ".dcserve-store"
    /// Largest metadata record read (records are a few hundred bytes).
    static let maxRecordBytes = 1 << 20
    private let state: LockedState<State>

    private struct CachedBytes {
        var bytes: [UInt8]
        var lastUse: UInt64
    }

    private struct State {
        var index: [DictionaryHash: DictionaryMetadata] = [:]
        var cache: [DictionaryHash: CachedBytes] = [:]
        var cachedBytes = 0
        var tick: UInt64 = 0
        var dirty = Set<DictionaryHash>()
    }

    /// Opens (creating if needed) the store in `directory` and rebuilds the index from disk.
    /// - Parameters:
    ///   - cacheBudget: bytes of dictionaries kept in memory.
    ///   - maxDictionaryBytes: the largest dictionary stored or read.
    public init(directory: String, retention: DictionaryRetention = DictionaryRetention(), cacheBudget: Int = 64 << 20,
                maxDictionaryBytes: Int = DirectoryDictionaryStore.defaultMaxDictionaryBytes,
                logger: Logger = Logger(label: "dcserve.dictionary-store")) throws {
        self.directory = directory.hasSuffix("/") && directory.count > 1 ? String(directory.dropLast()) : directory
        self.retention = retention
        self.cacheBudget = cacheBudget
        self.maxDictionaryBytes = maxDictionaryBytes
        self.logger = logger
        do {
            try FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true)
        } catch {
            throw DictionaryStoreError("cannot create dictionary store directory \(directory): \(error.localizedDescription)")
        }
        let marker = self.directory + "/" + Self.markerName
        if !StoreFileRead.isRegularFile(marker) {
            try AtomicFile.writeAtomically(Array("dcserve dictionary store: <sha-256 hex> = dictionary bytes, <hex>.json = its record.\nOnly files dcserve wrote here are ever removed or moved.\n".utf8), to: marker)
        }
        state = LockedState(State())
        let index = try scan()
        state.withLock { $0.index = index }
    }

    // MARK: Paths

    private func dataPath(_ hash: DictionaryHash) -> String { directory + "/" + hash.hex }
    private func metadataPath(_ hash: DictionaryHash) -> String { directory + "/" + hash.hex + ".json" }
    private var quarantineDirectory: String { directory + "/quarantine" }

    // MARK: DictionaryStore

    @discardableResult
    public func put(_ bytes: [UInt8], description: DictionaryDescription, now: Date) throws -> DictionaryHash {
        guard bytes.count <= maxDictionaryBytes else {
            throw DictionaryStoreError("dictionary of \(bytes.count) bytes exceeds the store's limit of \(maxDictionaryBytes) bytes")
        }
        let hash = SHA256.hash(bytes)
        let existing: DictionaryMetadata? = state.withLock { state in
            guard var record = state.index[hash] else { return nil }
            Self.refresh(&record, with: description, now: now)
            state.index[hash] = record
            state.dirty.insert(hash)
            return record
        }
        if existing != nil, StoreFileRead.isRegularFile(dataPath(hash)) { return hash }

        let record = DictionaryMetadata(
            formatVersion: DictionaryMetadata.currentFormatVersion, hash: hash.hex, match: description.pattern.source,
            pathPattern: description.pattern.pathname, matchDestinations: description.matchDestinations,
            id: description.id?.value, rule: description.rule, sourcePath: description.sourcePath,
            firstServed: existing?.firstServed ?? now, lastServed: now, maxAge: description.maxAge,
            expires: description.maxAge.map { now.addingTimeInterval(TimeInterval($0)) }, byteSize: bytes.count,
            partition: description.partition)
        try AtomicFile.writeAtomically(try Self.encode(record), to: metadataPath(hash))
        try AtomicFile.writeAtomically(bytes, to: dataPath(hash))
        state.withLock { state in
            if var concurrent = state.index[hash] {
                Self.refresh(&concurrent, with: description, now: now)
                state.index[hash] = concurrent
                state.dirty.insert(hash)
            } else {
                state.index[hash] = record
            }
            Self.cache(bytes, for: hash, in: &state, budget: cacheBudget)
        }
        logger.debug("stored dictionary", metadata: ["hash": "\(hash.hex)", "bytes": "\(bytes.count)", "match": "\(record.match)"])
        return hash
    }

    public func get(_ hash: DictionaryHash, partition: String?) -> StoredDictionary? {
        // One record per hash here: the partition of its first `put` (identical bytes stored later
        // under another partition are not found for that one: a miss, never another partition's answer).
        guard let stored = loadVerified(hash), stored.metadata.partition == partition else { return nil }
        return stored
    }

    /// The verified dictionary `hash` whatever its partition — for a tier in front of which another
    /// store decides partitions (``TieredDictionaryStore``'s local cache), never for request lookups.
    public func loadVerified(_ hash: DictionaryHash) -> StoredDictionary? {
        let lookup: (DictionaryMetadata, [UInt8]?)? = state.withLock { state in
            guard let record = state.index[hash] else { return nil }
            if var cached = state.cache[hash] {
                state.tick += 1
                cached.lastUse = state.tick
                state.cache[hash] = cached
                return (record, cached.bytes)
            }
            return (record, nil)
        }
        guard let (record, cachedBytes) = lookup else { return adoptFromDisk(hash) }
        if let cachedBytes { return StoredDictionary(hash: hash, bytes: cachedBytes, metadata: record) }

        let read = StoreFileRead.contents(of: dataPath(hash), maxBytes: maxDictionaryBytes)
        guard let bytes = read.bytes else {
            logger.error("dictionary file missing or unreadable; forgetting it",
                         metadata: ["hash": "\(hash.hex)", "path": "\(dataPath(hash))", "read": "\(read.summary)"])
            state.withLock { state in
                state.index[hash] = nil
                state.dirty.remove(hash)
            }
            return nil
        }
        let actual = SHA256.hash(bytes)
        guard actual == hash else {
            quarantine(hash, reason: "SHA-256 of the file is \(actual.hex)")
            return nil
        }
        state.withLock { Self.cache(bytes, for: hash, in: &$0, budget: cacheBudget) }
        return StoredDictionary(hash: hash, bytes: bytes, metadata: record)
    }

    public func metadata(_ hash: DictionaryHash, partition: String?) -> DictionaryMetadata? {
        state.withLock { state in state.index[hash].flatMap { $0.partition == partition ? $0 : nil } }
    }

    public var records: [DictionaryMetadata] { state.withLock { Array($0.index.values) } }

    /// Notes a use of `hash` whatever its partition (recency for a cache tier's byte budget).
    @discardableResult
    public func recordUsed(_ hash: DictionaryHash, at date: Date) -> Bool {
        guard let partition = state.withLock({ $0.index[hash].map { $0.partition } }) else { return false }
        return recordServed(hash, partition: partition, at: date)
    }

    /// Whether `record` belongs to `partition`, and whether it moved (``DictionaryMetadata/noteServed(at:)``).
    private static func serve(_ record: inout DictionaryMetadata, partition: String?, at date: Date) -> (matches: Bool, moved: Bool) {
        guard record.partition == partition else { return (false, false) }
        return (true, record.noteServed(at: date))
    }

    @discardableResult
    public func recordServed(_ hash: DictionaryHash, partition: String?, at date: Date) -> Bool {
        state.withLock { state in
            // Updated in place (one hash of the key, no copy of the record): called on every request.
            // Whole seconds are enough for `lastServed`: a busy dictionary is rewritten at most once a
            // second, not once per request.
            guard let i = state.index.index(forKey: hash) else { return false }
            // In place (`inout` through the dictionary's values): reading a field through the getter
            // would copy the whole record.
            let (matches, moved) = Self.serve(&state.index.values[i], partition: partition, at: date)
            if moved { state.dirty.insert(hash) }
            return matches
        }
    }

    public func flush() throws {
        let pending: [(DictionaryHash, DictionaryMetadata)] = state.withLock { state in
            let list = state.dirty.compactMap { hash in state.index[hash].map { (hash, $0) } }
            state.dirty.removeAll()
            return list
        }
        var firstError: Error?
        for (hash, record) in pending {
            do {
                try AtomicFile.writeAtomically(try Self.encode(record), to: metadataPath(hash))
                // Removed by `prune` or quarantined meanwhile: do not leave an orphan record behind.
                if state.withLock({ $0.index[hash] == nil }) { unlink(metadataPath(hash)) }
            } catch {
                firstError = firstError ?? error
                _ = state.withLock { $0.dirty.insert(hash) }
            }
        }
        if let firstError { throw firstError }
    }

    @discardableResult
    public func prune(now: Date) -> [DictionaryRemoval] {
        let removals: [DictionaryRemoval] = state.withLock { state in
            var removals: [DictionaryRemoval] = []
            func remove(_ hash: DictionaryHash, _ reason: DictionaryRemoval.Reason) {
                guard let record = state.index.removeValue(forKey: hash) else { return }
                if let cached = state.cache.removeValue(forKey: hash) { state.cachedBytes -= cached.bytes.count }
                state.dirty.remove(hash)
                removals.append(DictionaryRemoval(hash: hash, reason: reason, partition: record.partition))
            }
            if let keep = retention.keepPastExpiry {
                for (hash, record) in state.index {
                    if let expires = record.expires, now > expires.addingTimeInterval(keep) { remove(hash, .expired) }
                }
            }
            // Expired first (clients no longer hold a fresh copy), then least recently served; ties
            // broken by hash for a stable order.
            func isExpired(_ record: DictionaryMetadata) -> Bool { record.expires.map { now > $0 } ?? false }
            func dropFirst(_ a: (DictionaryHash, DictionaryMetadata), _ b: (DictionaryHash, DictionaryMetadata)) -> Bool {
                (isExpired(a.1) ? 0 : 1, a.1.lastServed, a.0) < (isExpired(b.1) ? 0 : 1, b.1.lastServed, b.0)
            }
            // The count cap bounds only expired dictionaries kept past expiry: a fresh one may still be
            // named by any client that fetched it, so only the byte budget removes fresh dictionaries.
            if let perRule = retention.maxCountPerRule {
                let byRule = Dictionary(grouping: state.index, by: { $0.value.rule ?? "" })
                for (_, entries) in byRule where entries.count > perRule {
                    let expired = entries.filter { isExpired($0.value) }.sorted(by: dropFirst)
                    for (hash, _) in expired.prefix(entries.count - perRule) { remove(hash, .ruleCount) }
                }
            }
            if let maxBytes = retention.maxTotalBytes {
                var total = state.index.values.reduce(0) { $0 + $1.byteSize }
                if total > maxBytes {
                    for (hash, record) in state.index.sorted(by: dropFirst) {
                        guard total > maxBytes else { break }
                        total -= record.byteSize
                        remove(hash, .totalBytes)
                    }
                }
            }
            return removals
        }
        for removal in removals {
            unlink(dataPath(removal.hash))
            unlink(metadataPath(removal.hash))
            logger.info("dictionary removed by retention", metadata: ["hash": "\(removal.hash.hex)", "reason": "\(removal.reason.rawValue)"])
        }
        if !removals.isEmpty { try? AtomicFile.syncDirectory(directory) }
        return removals
    }

    public var hashes: [DictionaryHash] { state.withLock { Array($0.index.keys) } }

    /// Bytes currently held by the in-memory cache (for metrics).
    public var cachedByteCount: Int { state.withLock { $0.cachedBytes } }

    /// Sum of the sizes of all stored dictionaries (for metrics).
    public var totalByteCount: Int { state.withLock { $0.index.values.reduce(0) { $0 + $1.byteSize } } }

    // MARK: Internals

    private static func refresh(_ record: inout DictionaryMetadata, with description: DictionaryDescription, now: Date) {
        if now > record.lastServed { record.lastServed = now }
        record.match = description.pattern.source
        record.pathPattern = description.pattern.pathname
        record.matchDestinations = description.matchDestinations
        record.id = description.id?.value
        record.rule = description.rule ?? record.rule
        record.sourcePath = description.sourcePath ?? record.sourcePath
        record.maxAge = description.maxAge ?? record.maxAge
        if let maxAge = record.maxAge { record.expires = record.lastServed.addingTimeInterval(TimeInterval(maxAge)) }
    }

    private static func cache(_ bytes: [UInt8], for hash: DictionaryHash, in state: inout State, budget: Int) {
        guard bytes.count <= budget else { return }
        state.tick += 1
        if let old = state.cache[hash] { state.cachedBytes -= old.bytes.count }
        state.cache[hash] = CachedBytes(bytes: bytes, lastUse: state.tick)
        state.cachedBytes += bytes.count
        // Least recently used out; a linear scan is fine for the few hundred dictionaries a store holds.
        while state.cachedBytes > budget, let victim = state.cache.min(by: { $0.value.lastUse < $1.value.lastUse }) {
            state.cache[victim.key] = nil
            state.cachedBytes -= victim.value.bytes.count
        }
    }

    private static func encode(_ record: DictionaryMetadata) throws(DictionaryStoreError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        do { return [UInt8](try encoder.encode(record)) + [0x0A] } catch {
            throw DictionaryStoreError("cannot encode metadata for \(record.hash): \(error)")
        }
    }

    private static func decode(_ bytes: [UInt8]) -> DictionaryMetadata? {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try? decoder.decode(DictionaryMetadata.self, from: Data(bytes))
    }

    /// Moves a dictionary's files into `quarantine/`, forgets it, and logs why.
    private func quarantine(_ hash: DictionaryHash, reason: String) {
        state.withLock { state in
            state.index[hash] = nil
            if let cached = state.cache.removeValue(forKey: hash) { state.cachedBytes -= cached.bytes.count }
            state.dirty.remove(hash)
        }
        moveToQuarantine(name: hash.hex)
        moveToQuarantine(name: hash.hex + ".json")
        logger.error("dictionary file corrupted; quarantined, never used",
                     metadata: ["hash": "\(hash.hex)", "reason": "\(reason)", "quarantine": "\(quarantineDirectory)"])
    }

    private func moveToQuarantine(name: String) {
        let source = directory + "/" + name
        var st = stat()
        guard lstat(source, &st) == 0 else { return }
        try? FileManager.default.createDirectory(atPath: quarantineDirectory, withIntermediateDirectories: true)
        var qst = stat()
        // Never move our files through a symlink planted as `quarantine`.
        guard lstat(quarantineDirectory, &qst) == 0, (qst.st_mode & S_IFMT) == S_IFDIR else {
            unlink(source)
            return
        }
        let target = quarantineDirectory + "/" + name + "." + String(UInt64(Date().timeIntervalSince1970 * 1000))
        if rename(source, target) != 0 { unlink(source) }
    }

    /// Rebuilds the index from the directory (see the type's documentation).
    /// A dictionary another process sharing this directory stored after our scan: read, verify and
    /// index it. Costs one failed `stat` for hashes nobody stored.
    private func adoptFromDisk(_ hash: DictionaryHash) -> StoredDictionary? {
        var st = stat()
        guard lstat(dataPath(hash), &st) == 0 else { return nil }
        guard var record = ownRecord(hash), let bytes = StoreFileRead.contents(of: dataPath(hash), maxBytes: maxDictionaryBytes).bytes else {
            // Being written by the other process, removed meanwhile, a symlink or not ours: not usable.
            return nil
        }
        let actual = SHA256.hash(bytes)
        guard actual == hash else {
            quarantine(hash, reason: "SHA-256 of the file is \(actual.hex)")
            return nil
        }
        record.byteSize = bytes.count
        state.withLock { state in
            if state.index[hash] == nil { state.index[hash] = record }
            Self.cache(bytes, for: hash, in: &state, budget: cacheBudget)
        }
        logger.info("adopted dictionary stored by another process", metadata: ["hash": "\(hash.hex)"])
        return StoredDictionary(hash: hash, bytes: bytes, metadata: record)
    }

    /// Our record for `hash`: `<hex>.json`, a regular file (not followed if a symlink) that decodes as a
    /// ``DictionaryMetadata`` of a known format naming `hash`. nil otherwise.
    private func ownRecord(_ hash: DictionaryHash) -> DictionaryMetadata? {
        guard let bytes = StoreFileRead.contents(of: metadataPath(hash), maxBytes: Self.maxRecordBytes).bytes,
              let record = Self.decode(bytes), record.formatVersion <= DictionaryMetadata.currentFormatVersion,
              record.hash == hash.hex else { return nil }
        return record
    }

    /// Logs, once per name and store instance, that a file is not the store's and is left alone.
    private func warnForeign(_ name: String, _ why: String) {
        guard warnedForeign.withLock({ $0.insert(name).inserted }) else { return }
        logger.warning("file in the dictionary store was not written by it; left alone, not used",
                       metadata: ["path": "\(directory)/\(name)", "reason": "\(why)"])
    }

    /// Whether `name` is one of our temporary files: `.tmp-` followed by a UUID (as ``AtomicFile`` names them).
    static func isOwnTemporaryName(_ name: String) -> Bool {
        guard name.hasPrefix(AtomicFile.temporaryPrefix) else { return false }
        return UUID(uuidString: String(name.dropFirst(AtomicFile.temporaryPrefix.count))) != nil
    }

    private func scan() throws -> [DictionaryHash: DictionaryMetadata] {
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: directory) } catch {
            throw DictionaryStoreError("cannot list dictionary store \(directory): \(error.localizedDescription)")
        }
        let nameSet = Set(names)
        var index: [DictionaryHash: DictionaryMetadata] = [:]
        for name in names.sorted() {
            let path = directory + "/" + name
            if name == Self.markerName || name == "quarantine" { continue }
            if Self.isOwnTemporaryName(name) {
                if StoreFileRead.isRegularFile(path) {
                    unlink(path)
                    logger.notice("removed stray temporary file", metadata: ["path": "\(path)"])
                } else {
                    warnForeign(name, "not a regular file")
                }
                continue
            }
            if name.hasSuffix(".json"), let hash = DictionaryHash(hex: name.dropLast(5)), name.dropLast(5) == hash.hex {
                if !nameSet.contains(hash.hex) {
                    if ownRecord(hash) != nil {
                        unlink(path)
                        logger.notice("removed metadata record without dictionary bytes", metadata: ["path": "\(path)"])
                    } else {
                        warnForeign(name, "not a dictionary record of this store")
                    }
                }
                continue
            }
            guard let hash = DictionaryHash(hex: name), name == hash.hex else {
                warnForeign(name, "not named like a store file")
                continue
            }
            guard StoreFileRead.isRegularFile(path) else {
                warnForeign(name, "not a regular file (symlinks are never followed)")
                continue
            }
            guard var record = ownRecord(hash) else {
                warnForeign(name, "no dictionary record of this store for it")
                continue
            }
            switch StoreFileRead.contents(of: path, maxBytes: maxDictionaryBytes) {
            case .bytes(let bytes):
                let actual = SHA256.hash(bytes)
                guard actual == hash else {
                    quarantine(hash, reason: "SHA-256 of the file is \(actual.hex)")
                    continue
                }
                record.byteSize = bytes.count
                index[hash] = record
            case .tooLarge(let size):
                quarantine(hash, reason: "\(size) bytes, more than the store's limit of \(maxDictionaryBytes); not read")
            case let other:
                logger.error("cannot read dictionary file; skipped", metadata: ["path": "\(path)", "read": "\(other.summary)"])
            }
        }
        logger.info("dictionary store opened", metadata: ["directory": "\(directory)", "dictionaries": "\(index.count)"])
        return index
    }
}
