import DictionaryCodec
import Foundation
import Logging
import Locking


/// A ``DictionaryStore`` in one local directory.
///
/// Layout: `<dir>/<hex sha-256>` holds the dictionary bytes, once whoever they were stored for. Each
/// (partition, hash) pair has its own ``DictionaryMetadata`` record: `<dir>/<hex>.json` for the shared
/// dictionary (partition nil), `<dir>/<hex>.<tag>.json` for a partition's, where `<tag>` is the hex
/// SHA-256 of the partition string (``partitionTag(_:)``), so identical bytes handed to two users are
/// two records and one file, each user finding only their own. `<dir>/quarantine/` receives files whose
/// bytes do not match their name; `<dir>/.tmp-<UUID>` are in-flight writes; `<dir>/.dcserve-store`
/// marks the directory as a store. Writes are atomic and durable (``AtomicFile``): a record is written
/// before the bytes, so a crash leaves at worst a record without bytes, removed at the next start.
/// A partition's record in the older layout (`<hex>.json` naming a partition) is moved to its own name
/// when the store opens.
///
/// Ownership: the store removes or moves only files it wrote — a `<hex>` file with at least one record
/// of ours naming that hash, such records, and `.tmp-<UUID>` files. Anything else in the directory
/// (other files, a `<hex>` without our record, a record file that is not ours or whose name does not
/// match the partition it names) is left alone, never read as a dictionary, and warned about once.
/// Symlinks are never followed (`O_NOFOLLOW`), and a file's size is checked against
/// `maxDictionaryBytes` before it is read.
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
/// Thread-safety: all mutable state (index, cache, dirty set) lives behind one lock (`Locked`); file I/O and
/// hashing run outside it, so concurrent requests only contend for short index updates. Safe to
/// share across tasks and threads (`Sendable`, Swift 6 strict concurrency).
public final class DirectoryDictionaryStore: DictionaryStore {
    public let directory: String
    public let retention: DictionaryRetention
    public let cacheBudget: Int
    /// The largest dictionary `put` accepts and the largest file read as one (larger files are never read).
    public let maxDictionaryBytes: Int
    /// Files the application keeps in the directory (see `init`), left alone by the scan.
    public let companionFiles: Set<String>
    private let logger: Logger
    /// Names of files the store does not own, warned about once each.
    private let warnedForeign = Locked(Set<String>())

    /// The default for `maxDictionaryBytes`: the largest body Chromium registers as a dictionary (100 MiB).
    public static let defaultMaxDictionaryBytes = 100 << 20
    /// Name of the file marking a directory as a dictionary store.
    public static let markerName = ".dcserve-store"
    /// Prefix of the SQLite store's files, which may share the directory (left alone, not warned about).
    static let sqliteStoreFilePrefix = "dcserve.sqlite"
    /// Largest metadata record read (records are a few hundred bytes).
    static let maxRecordBytes = 1 << 20
    private let state: Locked<State>

    private struct CachedBytes {
        var bytes: [UInt8]
        var lastUse: UInt64
    }

    /// One record's key: its hash and partition (nil = shared).
    private struct RecordKey: Hashable {
        let hash: DictionaryHash
        let partition: String?
    }

    /// The records of one hash, at most one per partition (nil = shared); never empty in the index.
    private typealias Records = [String?: DictionaryMetadata]

    private struct State {
        var index: [DictionaryHash: Records] = [:]
        var cache: [DictionaryHash: CachedBytes] = [:]
        var cachedBytes = 0
        var tick: UInt64 = 0
        var dirty = Set<RecordKey>()

        /// Bytes of the stored dictionaries on disk: each file once, whatever its records.
        var diskBytes: Int { index.values.reduce(0) { $0 + ($1.values.first?.byteSize ?? 0) } }

        /// Every record with its key.
        var allRecords: [(RecordKey, DictionaryMetadata)] {
            index.flatMap { hash, records in records.map { (RecordKey(hash: hash, partition: $0.key), $0.value) } }
        }

        /// Forgets every record of `hash` and its cached bytes; the partitions it had.
        mutating func forget(_ hash: DictionaryHash) -> [String?] {
            let partitions = index.removeValue(forKey: hash).map { Array($0.keys) } ?? []
            if let cached = cache.removeValue(forKey: hash) { cachedBytes -= cached.bytes.count }
            for partition in partitions { dirty.remove(RecordKey(hash: hash, partition: partition)) }
            return partitions
        }
    }

    /// Opens (creating if needed) the store in `directory` and rebuilds the index from disk.
    /// - Parameters:
    ///   - cacheBudget: bytes of dictionaries kept in memory.
    ///   - maxDictionaryBytes: the largest dictionary stored or read.
    ///   - companionFiles: names of files the application keeps in the same directory (its partition
    ///     secret): never read, moved or warned about.
    public init(directory: String, retention: DictionaryRetention = DictionaryRetention(), cacheBudget: Int = 64 << 20,
                maxDictionaryBytes: Int = DirectoryDictionaryStore.defaultMaxDictionaryBytes,
                companionFiles: Set<String> = [],
                logger: Logger = Logger(label: "dcserve.dictionary-store")) throws {
        self.directory = directory.hasSuffix("/") && directory.count > 1 ? String(directory.dropLast()) : directory
        self.retention = retention
        self.cacheBudget = cacheBudget
        self.maxDictionaryBytes = maxDictionaryBytes
        self.companionFiles = companionFiles
        self.logger = logger
        do {
            try FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw DictionaryStoreError("cannot create dictionary store directory \(directory): \(error.localizedDescription)")
        }
        // Dictionaries hold users' responses: an existing store (made before stores were private) is
        // tightened at open.
        StorePermissions.tighten(directory: self.directory)
        StorePermissions.tighten(directory: self.directory + "/quarantine")
        let marker = self.directory + "/" + Self.markerName
        if !StoreFileRead.isRegularFile(marker) {
            try AtomicFile.writeAtomically(Array("dcserve dictionary store: <sha-256 hex> = dictionary bytes, <hex>.json = its shared record, <hex>.<partition tag>.json = a partition's.\nOnly files dcserve wrote here are ever removed or moved.\n".utf8), to: marker)
        }
        state = Locked(State())
        let index = try scan()
        state.withLock { $0.index = index }
    }

    // MARK: Paths

    private func dataPath(_ hash: DictionaryHash) -> String { directory + "/" + hash.hex }
    private func recordPath(_ hash: DictionaryHash, partition: String?) -> String {
        directory + "/" + Self.recordName(hash, partition: partition)
    }

    /// The file name of the record of (`partition`, `hash`): `<hex>.json` shared, `<hex>.<tag>.json` a partition's.
    public static func recordName(_ hash: DictionaryHash, partition: String?) -> String {
        guard let partition else { return hash.hex + ".json" }
        return hash.hex + "." + partitionTag(partition) + ".json"
    }

    /// A partition's tag in file names: the hex SHA-256 of its string (any partition string is then a
    /// safe, fixed-length name).
    public static func partitionTag(_ partition: String) -> String { SHA256.hash(Array(partition.utf8)).hex }

    private var quarantineDirectory: String { directory + "/quarantine" }

    // MARK: DictionaryStore

    @discardableResult
    public func put(_ bytes: [UInt8], description: DictionaryDescription, now: Date) throws -> DictionaryHash {
        guard bytes.count <= maxDictionaryBytes else {
            throw DictionaryStoreError("dictionary of \(bytes.count) bytes exceeds the store's limit of \(maxDictionaryBytes) bytes")
        }
        let hash = SHA256.hash(bytes)
        let partition = description.partition
        let key = RecordKey(hash: hash, partition: partition)
        // `bytesKnown`: another record of these bytes is indexed, so their file was written and verified.
        let (existing, bytesKnown): (DictionaryMetadata?, Bool) = state.withLock { state in
            guard let i = state.index.index(forKey: hash) else { return (nil, false) }
            guard var record = state.index.values[i][partition] else { return (nil, true) }
            Self.refresh(&record, with: description, now: now)
            state.index.values[i][partition] = record
            state.dirty.insert(key)
            return (record, true)
        }
        let bytesOnDisk = bytesKnown && StoreFileRead.isRegularFile(dataPath(hash))
        if existing != nil, bytesOnDisk { return hash }

        let record = DictionaryMetadata(
            formatVersion: DictionaryMetadata.currentFormatVersion, hash: hash.hex, match: description.pattern.source,
            pathPattern: description.pattern.pathname, matchDestinations: description.matchDestinations,
            id: description.id?.value, rule: description.rule, sourcePath: description.sourcePath,
            firstServed: existing?.firstServed ?? now, lastServed: now, maxAge: description.maxAge,
            expires: description.maxAge.map { now.addingTimeInterval(TimeInterval($0)) }, byteSize: bytes.count,
            partition: partition)
        try AtomicFile.writeAtomically(try Self.encode(record), to: recordPath(hash, partition: partition))
        if !bytesOnDisk { try AtomicFile.writeAtomically(bytes, to: dataPath(hash)) }
        state.withLock { state in
            if var concurrent = state.index[hash]?[partition] {
                Self.refresh(&concurrent, with: description, now: now)
                state.index[hash]?[partition] = concurrent
                state.dirty.insert(key)
            } else {
                state.index[hash, default: [:]][partition] = record
            }
            Self.cache(bytes, for: hash, in: &state, budget: cacheBudget)
        }
        logger.debug("stored dictionary", metadata: ["hash": "\(hash.hex)", "bytes": "\(bytes.count)", "match": "\(record.match)"])
        return hash
    }

    public func get(_ hash: DictionaryHash, partition: String?) -> StoredDictionary? {
        guard let record = state.withLock({ $0.index[hash]?[partition] }) else {
            return adoptFromDisk(hash, partition: partition)
        }
        return verifiedBytes(hash).map { StoredDictionary(hash: hash, bytes: $0, metadata: record) }
    }

    /// The verified dictionary `hash` whatever its partition (the record returned is one of its
    /// records) — for a tier in front of which another store decides partitions
    /// (``TieredDictionaryStore``'s local cache), never for request lookups.
    public func loadVerified(_ hash: DictionaryHash) -> StoredDictionary? {
        guard let record = state.withLock({ $0.index[hash]?.values.first }) else { return adoptFromDisk(hash, partition: nil) }
        return verifiedBytes(hash).map { StoredDictionary(hash: hash, bytes: $0, metadata: record) }
    }

    /// The bytes of the indexed `hash`: from the memory cache, or read from disk and verified (then
    /// cached). A missing file forgets the hash's records; a mismatch quarantines them.
    private func verifiedBytes(_ hash: DictionaryHash) -> [UInt8]? {
        let cachedBytes: [UInt8]? = state.withLock { state in
            guard let i = state.cache.index(forKey: hash) else { return nil }
            state.tick += 1
            state.cache.values[i].lastUse = state.tick
            return state.cache.values[i].bytes
        }
        if let cachedBytes { return cachedBytes }
        let read = StoreFileRead.contents(of: dataPath(hash), maxBytes: maxDictionaryBytes)
        guard let bytes = read.bytes else {
            logger.error("dictionary file missing or unreadable; forgetting it",
                         metadata: ["hash": "\(hash.hex)", "path": "\(dataPath(hash))", "read": "\(read.summary)"])
            _ = state.withLock { $0.forget(hash) }
            return nil
        }
        let actual = SHA256.hash(bytes)
        guard actual == hash else {
            quarantine(hash, reason: "SHA-256 of the file is \(actual.hex)")
            return nil
        }
        state.withLock { Self.cache(bytes, for: hash, in: &$0, budget: cacheBudget) }
        return bytes
    }

    public func metadata(_ hash: DictionaryHash, partition: String?) -> DictionaryMetadata? {
        state.withLock { $0.index[hash]?[partition] }
    }

    public var records: [DictionaryMetadata] { state.withLock { $0.index.values.flatMap { $0.values } } }

    /// Notes a use of `hash` whatever its partition (recency for a cache tier's byte budget).
    @discardableResult
    public func recordUsed(_ hash: DictionaryHash, at date: Date) -> Bool {
        guard let partition = state.withLock({ $0.index[hash]?.keys.first }) else { return false }
        return recordServed(hash, partition: partition, at: date)
    }

    @discardableResult
    public func recordServed(_ hash: DictionaryHash, partition: String?, at date: Date) -> Bool {
        state.withLock { state in
            // Updated in place (one hash of each key, no copy of the record): called on every request.
            // Whole seconds are enough for `lastServed`: a busy dictionary is rewritten at most once a
            // second, not once per request.
            guard let i = state.index.index(forKey: hash), let j = state.index.values[i].index(forKey: partition) else {
                return false
            }
            // In place (`inout` through the dictionaries' values): reading a field through the getter
            // would copy the whole record.
            if state.index.values[i].values[j].noteServed(at: date) { state.dirty.insert(RecordKey(hash: hash, partition: partition)) }
            return true
        }
    }

    public func flush() throws {
        let pending: [(RecordKey, DictionaryMetadata)] = state.withLock { state in
            let list = state.dirty.compactMap { key in state.index[key.hash]?[key.partition].map { (key, $0) } }
            state.dirty.removeAll()
            return list
        }
        var firstError: Error?
        for (key, record) in pending {
            let path = recordPath(key.hash, partition: key.partition)
            do {
                try AtomicFile.writeAtomically(try Self.encode(record), to: path)
                // Removed by `prune` or quarantined meanwhile: do not leave an orphan record behind.
                if state.withLock({ $0.index[key.hash]?[key.partition] == nil }) { unlink(path) }
            } catch {
                firstError = firstError ?? error
                _ = state.withLock { $0.dirty.insert(key) }
            }
        }
        if let firstError { throw firstError }
    }

    @discardableResult
    public func prune(now: Date) -> [DictionaryRemoval] {
        // Record files to remove, and the bytes files whose last record went.
        var unlinkRecords: [String] = [], unlinkBytes: [DictionaryHash] = []
        let removals: [DictionaryRemoval] = state.withLock { state in
            var removals: [DictionaryRemoval] = []
            /// Removes one record; true when it was the last of its hash (the bytes go too).
            @discardableResult
            func remove(_ key: RecordKey, _ reason: DictionaryRemoval.Reason) -> Bool {
                guard let i = state.index.index(forKey: key.hash),
                      state.index.values[i].removeValue(forKey: key.partition) != nil else { return false }
                state.dirty.remove(key)
                removals.append(DictionaryRemoval(hash: key.hash, reason: reason, partition: key.partition))
                unlinkRecords.append(recordPath(key.hash, partition: key.partition))
                guard state.index.values[i].isEmpty else { return false }
                _ = state.forget(key.hash)
                unlinkBytes.append(key.hash)
                return true
            }
            if let keep = retention.keepPastExpiry {
                for (key, record) in state.allRecords {
                    if let expires = record.expires, now > expires.addingTimeInterval(keep) { remove(key, .expired) }
                }
            }
            // Expired first (clients no longer hold a fresh copy), then least recently served; ties
            // broken by hash and partition for a stable order.
            func isExpired(_ record: DictionaryMetadata) -> Bool { record.expires.map { now > $0 } ?? false }
            func dropFirst(_ a: (RecordKey, DictionaryMetadata), _ b: (RecordKey, DictionaryMetadata)) -> Bool {
                (isExpired(a.1) ? 0 : 1, a.1.lastServed, a.0.hash, a.0.partition ?? "")
                    < (isExpired(b.1) ? 0 : 1, b.1.lastServed, b.0.hash, b.0.partition ?? "")
            }
            // The count cap bounds only expired dictionaries kept past expiry: a fresh one may still be
            // named by any client that fetched it, so only the byte budget removes fresh dictionaries.
            if let perRule = retention.maxCountPerRule {
                let byRule = Dictionary(grouping: state.allRecords, by: { $0.1.rule ?? "" })
                for (_, entries) in byRule where entries.count > perRule {
                    let expired = entries.filter { isExpired($0.1) }.sorted(by: dropFirst)
                    for (key, _) in expired.prefix(entries.count - perRule) { remove(key, .ruleCount) }
                }
            }
            // The budget counts bytes on disk: a dictionary held by several partitions once, freed with
            // its last record.
            if let maxBytes = retention.maxTotalBytes {
                var total = state.diskBytes
                if total > maxBytes {
                    for (key, record) in state.allRecords.sorted(by: dropFirst) {
                        guard total > maxBytes else { break }
                        if remove(key, .totalBytes) { total -= record.byteSize }
                    }
                }
            }
            return removals
        }
        for path in unlinkRecords { unlink(path) }
        for hash in unlinkBytes { unlink(dataPath(hash)) }
        for removal in removals {
            logger.info("dictionary removed by retention", metadata: ["hash": "\(removal.hash.hex)", "reason": "\(removal.reason.rawValue)"])
        }
        if !removals.isEmpty { try? AtomicFile.syncDirectory(directory) }
        return removals
    }

    /// Every stored hash, once whatever the number of partitions holding it.
    public var hashes: [DictionaryHash] { state.withLock { Array($0.index.keys) } }

    /// Bytes currently held by the in-memory cache (for metrics).
    public var cachedByteCount: Int { state.withLock { $0.cachedBytes } }

    /// Sum of the sizes of all stored dictionaries, each file once (for metrics).
    public var totalByteCount: Int { state.withLock { $0.diskBytes } }

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

    /// Moves a dictionary's bytes and records into `quarantine/`, forgets it, and logs why.
    /// `recordNames`: its record files (default: those of the partitions indexed for it).
    private func quarantine(_ hash: DictionaryHash, reason: String, recordNames: [String]? = nil) {
        let partitions = state.withLock { $0.forget(hash) }
        moveToQuarantine(name: hash.hex)
        for name in recordNames ?? partitions.map({ Self.recordName(hash, partition: $0) }) { moveToQuarantine(name: name) }
        logger.error("dictionary file corrupted; quarantined, never used",
                     metadata: ["hash": "\(hash.hex)", "reason": "\(reason)", "quarantine": "\(quarantineDirectory)"])
    }

    private func moveToQuarantine(name: String) {
        let source = directory + "/" + name
        var st = stat()
        guard lstat(source, &st) == 0 else { return }
        try? FileManager.default.createDirectory(atPath: quarantineDirectory, withIntermediateDirectories: true,
                                                 attributes: [.posixPermissions: 0o700])
        var qst = stat()
        // Never move our files through a symlink planted as `quarantine`.
        guard lstat(quarantineDirectory, &qst) == 0, (qst.st_mode & S_IFMT) == S_IFDIR else {
            unlink(source)
            return
        }
        let target = quarantineDirectory + "/" + name + "." + String(UInt64(Date().timeIntervalSince1970 * 1000))
        if rename(source, target) != 0 { unlink(source) }
    }

    /// (`partition`, `hash`) stored by another process sharing this directory after our scan: read,
    /// verify and index it. Costs one failed `lstat` for hashes nobody stored (one failed `open` more
    /// when other partitions hold the bytes).
    private func adoptFromDisk(_ hash: DictionaryHash, partition: String?) -> StoredDictionary? {
        var st = stat()
        guard lstat(dataPath(hash), &st) == 0 else { return nil }
        guard var record = ownRecord(Self.recordName(hash, partition: partition), hash: hash), record.partition == partition,
              let bytes = StoreFileRead.contents(of: dataPath(hash), maxBytes: maxDictionaryBytes).bytes else {
            // Being written by the other process, removed meanwhile, a symlink or not ours: not usable.
            return nil
        }
        let actual = SHA256.hash(bytes)
        guard actual == hash else {
            quarantine(hash, reason: "SHA-256 of the file is \(actual.hex)",
                       recordNames: [Self.recordName(hash, partition: partition)])
            return nil
        }
        record.byteSize = bytes.count
        state.withLock { state in
            if state.index[hash]?[partition] == nil { state.index[hash, default: [:]][partition] = record }
            Self.cache(bytes, for: hash, in: &state, budget: cacheBudget)
        }
        logger.info("adopted dictionary stored by another process", metadata: ["hash": "\(hash.hex)"])
        return StoredDictionary(hash: hash, bytes: bytes, metadata: record)
    }

    /// Our record in the file `name`: a regular file (not followed if a symlink) that decodes as a
    /// ``DictionaryMetadata`` of a known format naming `hash`. nil otherwise. Its partition is the
    /// caller's to check against the name.
    private func ownRecord(_ name: String, hash: DictionaryHash) -> DictionaryMetadata? {
        guard let bytes = StoreFileRead.contents(of: directory + "/" + name, maxBytes: Self.maxRecordBytes).bytes,
              let record = Self.decode(bytes), record.formatVersion <= DictionaryMetadata.currentFormatVersion,
              record.hash == hash.hex else { return nil }
        return record
    }

    /// The hash and partition tag a record file's name says (tag nil: `<hex>.json`, the shared record
    /// or an older layout's); nil when `name` is not named like a record.
    static func parseRecordName(_ name: String) -> (hash: DictionaryHash, tag: String?)? {
        guard name.hasSuffix(".json") else { return nil }
        let parts = name.dropLast(5).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count <= 2, let hash = DictionaryHash(hex: parts[0]), parts[0] == hash.hex else { return nil }
        guard parts.count == 2 else { return (hash, nil) }
        let tag = parts[1]
        guard tag.utf8.count == 64, tag.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else { return nil }
        return (hash, String(tag))
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

    /// Rebuilds the index from the directory (see the type's documentation).
    private func scan() throws -> [DictionaryHash: Records] {
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: directory) } catch {
            throw DictionaryStoreError("cannot list dictionary store \(directory): \(error.localizedDescription)")
        }
        let nameSet = Set(names)
        var recordNames: [DictionaryHash: [(name: String, tag: String?)]] = [:]
        var dataNames: [(String, DictionaryHash)] = []
        for name in names.sorted() {
            let path = directory + "/" + name
            if name == Self.markerName || name == "quarantine" || companionFiles.contains(name)
                || name.hasPrefix(Self.sqliteStoreFilePrefix) { continue }
            if Self.isOwnTemporaryName(name) {
                if StoreFileRead.isRegularFile(path) {
                    unlink(path)
                    logger.notice("removed stray temporary file", metadata: ["path": "\(path)"])
                } else {
                    warnForeign(name, "not a regular file")
                }
                continue
            }
            if let (hash, tag) = Self.parseRecordName(name) {
                if nameSet.contains(hash.hex) {
                    recordNames[hash, default: []].append((name, tag))
                } else if ownRecord(name, hash: hash) != nil {
                    unlink(path)
                    logger.notice("removed metadata record without dictionary bytes", metadata: ["path": "\(path)"])
                } else {
                    warnForeign(name, "not a dictionary record of this store")
                }
                continue
            }
            guard let hash = DictionaryHash(hex: name), name == hash.hex else {
                warnForeign(name, "not named like a store file")
                continue
            }
            dataNames.append((name, hash))
        }
        var index: [DictionaryHash: Records] = [:]
        for (name, hash) in dataNames {
            let path = directory + "/" + name
            guard StoreFileRead.isRegularFile(path) else {
                warnForeign(name, "not a regular file (symlinks are never followed)")
                continue
            }
            let candidates = recordNames[hash] ?? []
            var records = Records()
            for (recordName, tag) in candidates {
                guard let record = ownRecord(recordName, hash: hash) else {
                    warnForeign(recordName, "not a dictionary record of this store")
                    continue
                }
                switch (tag, record.partition) {
                case (nil, nil):
                    records[nil] = record
                case (nil, let partition?):
                    // The older layout: a partition's record under the shared name. Moved to its own
                    // name unless that is already there (then the newer one is kept).
                    let own = Self.recordName(hash, partition: partition)
                    if !nameSet.contains(own) {
                        do { try AtomicFile.writeAtomically(try Self.encode(record), to: directory + "/" + own) } catch {
                            logger.error("cannot move a record to its partition's name; left as it is",
                                         metadata: ["path": "\(directory)/\(recordName)", "error": "\(error)"])
                            continue
                        }
                        records[partition] = record
                    }
                    unlink(directory + "/" + recordName)
                case (let tag?, let partition?) where tag == Self.partitionTag(partition):
                    records[partition] = record
                default:
                    warnForeign(recordName, "its name does not match the partition it names")
                }
            }
            guard !records.isEmpty else {
                warnForeign(name, "no dictionary record of this store for it")
                continue
            }
            switch StoreFileRead.contents(of: path, maxBytes: maxDictionaryBytes) {
            case .bytes(let bytes):
                let actual = SHA256.hash(bytes)
                guard actual == hash else {
                    quarantine(hash, reason: "SHA-256 of the file is \(actual.hex)", recordNames: candidates.map(\.name))
                    continue
                }
                for key in Array(records.keys) { records[key]?.byteSize = bytes.count }
                index[hash] = records
            case .tooLarge(let size):
                quarantine(hash, reason: "\(size) bytes, more than the store's limit of \(maxDictionaryBytes); not read",
                           recordNames: candidates.map(\.name))
            case let other:
                logger.error("cannot read dictionary file; skipped", metadata: ["path": "\(path)", "read": "\(other.summary)"])
            }
        }
        logger.info("dictionary store opened", metadata: ["directory": "\(directory)", "dictionaries": "\(index.count)"])
        return index
    }
}
