import DictionaryCodec
import DictionaryTransport
import Foundation
import GRDB
import GRDBSQLite
import Logging
import Locking

/// A ``DictionaryTransport/DictionaryStore`` in one SQLite database file: the single-instance store
/// made for many small versions (each user's last responses), where a directory of files churns inodes.
///
/// Layout: `<directory>/dcserve.sqlite` (plus SQLite's `-wal` and `-shm`), tables as
/// ``SQLiteDictionarySchema`` says: bytes once per SHA-256, one record per (partition, hash) with its
/// metadata as columns. The directory is created `0700` and the files `0600` (SQLite gives the `-wal`
/// and `-shm` files the database file's mode); a symlink in place of the database file is refused.
/// `<directory>/quarantine/` receives a database file SQLite reports as corrupt at open (a new one is
/// then created).
///
/// - Durability: WAL with `synchronous=NORMAL` (as GRDB sets up WAL mode): a committed transaction
///   survives the process being killed (kill -9): it is in the WAL, in the operating system's hands;
///   the WAL is synced to disk at each checkpoint, so an operating-system crash or power loss may lose
///   the transactions since the last one (a lost dictionary only costs a later miss: loads verify the
///   bytes). ``put(batch:)`` stores many dictionaries in one transaction — callers batch live
///   versions (see `LiveStoreWriter`); a dictionary counts as stored once its batch committed.
/// - Reads (`get`, `metadata`, `recordServed`'s first look, `records`) run on the calling thread
///   through a pool of reader connections, concurrently with a write (WAL snapshots). Every `get`
///   re-verifies SHA-256; on mismatch the row's bytes move to the `quarantine` table, its records are
///   removed, an error is logged and nil is returned.
/// - `recordServed` keeps the new `last_served` in memory; ``flush()`` (and every write) writes them.
///   Pairs written or updated recently are remembered (a bounded map), so naming a version just
///   written does not read the database.
/// - Retention (``DictionaryRetention``) runs in SQL: ``prune(now:)`` applies all of it, and every write
///   that takes the store past `maxTotalBytes` evicts at once (expired first, then least recently
///   served), so the file stays within its budget between housekeeping runs; those removals are
///   returned by the next ``prune(now:)``.
/// - Import: a directory store found in `directory` at open (its `<hex>` and `<hex>….json` files) is
///   verified, copied into the database in one transaction and its files removed, so it is imported
///   once; an interrupted import is repeated at the next open (records already present are kept).
///
/// Thread-safety: safe to share across threads (`Sendable`); the writer connection is serialised by
/// GRDB, reads are concurrent. Blocking: every method blocks its caller on SQLite work; call them from
/// store threads and background queues, not from Swift concurrency tasks.
public final class SQLiteDictionaryStore: DictionaryStore {
    /// The database file's name inside the store directory.
    public static let fileName = "dcserve.sqlite"
    /// Pairs remembered as held (``recordServed`` answers them from memory).
    static let recentLimit = 1 << 15
    /// The page size of a new database: dictionaries are tens of kilobytes, stored as chains of
    /// overflow pages written to the WAL, then checkpointed page by page; larger pages make fewer
    /// writes and reads per dictionary, at the price of writing whole index pages per transaction.
    public static let defaultPageSize = 8192

    /// Reader connections by default.
    public static let defaultReaders = 4

    public let directory: String
    /// The database file.
    public let path: String
    public let retention: DictionaryRetention
    /// The largest dictionary stored.
    public let maxDictionaryBytes: Int
    private let pool: DatabasePool
    private let logger: Logger
    private let state = Locked(State())

    private struct Key: Hashable {
        var partition: String
        var hash: DictionaryHash
    }

    private struct State {
        /// `last_served` updates not yet written.
        var served: [Key: Date] = [:]
        /// Pairs the store is known to hold (written or read since), with the `last_served` written:
        /// `recordServed` answers them without a read. At most ``recentLimit`` (emptied when full).
        var recent: [Key: Date] = [:]
        /// Sum of the stored blobs' sizes (each hash once).
        var totalBytes = 0
        /// Removals made by writes (the byte budget), reported by the next `prune`.
        var removals: [DictionaryRemoval] = []

        mutating func remember(_ key: Key, servedAt date: Date) {
            if recent.count >= SQLiteDictionaryStore.recentLimit && recent[key] == nil { recent.removeAll(keepingCapacity: true) }
            recent[key] = max(date, recent[key] ?? date)
        }
    }

    /// Opens (creating if needed) the store in `directory`, importing a directory store found there.
    /// - Parameters:
    ///   - pageCacheBytes: SQLite's page cache per connection (the writer and each reader).
    ///   - pageSize: SQLite's page size for a database created now (a power of two, 512...65536).
    ///   - readers: reader connections (concurrent reads at once).
    public init(directory: String, retention: DictionaryRetention = DictionaryRetention(),
                maxDictionaryBytes: Int = DirectoryDictionaryStore.defaultMaxDictionaryBytes,
                pageCacheBytes: Int = 2 << 20, pageSize: Int = defaultPageSize, readers: Int = SQLiteDictionaryStore.defaultReaders,
                logger: Logger = Logger(label: "dcserve.dictionary-store")) throws {
        self.directory = directory.hasSuffix("/") && directory.count > 1 ? String(directory.dropLast()) : directory
        self.path = self.directory + "/" + Self.fileName
        self.retention = retention
        self.maxDictionaryBytes = maxDictionaryBytes
        self.logger = logger
        do {
            try SQLiteStoreFiles.prepare(directory: self.directory, database: path)
            pool = try Self.open(path: path, pageCacheBytes: pageCacheBytes, pageSize: pageSize, readers: readers, logger: logger)
        } catch let error as SQLiteStoreOpenError {
            throw DictionaryStoreError("cannot open dictionary store \(path): \(error.message)")
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CORRUPT || error.resultCode == .SQLITE_NOTADB {
            let moved = SQLiteStoreFiles.quarantine(database: path, directory: self.directory)
            logger.error("dictionary store database is corrupt; moved to quarantine, starting an empty store",
                         metadata: ["path": "\(path)", "error": "\(error)", "quarantine": "\(moved ?? "(removed)")"])
            do {
                try SQLiteStoreFiles.prepare(directory: self.directory, database: path)
                pool = try Self.open(path: path, pageCacheBytes: pageCacheBytes, pageSize: pageSize, readers: readers, logger: logger)
            } catch {
                throw DictionaryStoreError("cannot open dictionary store \(path): \(error)")
            }
        } catch {
            throw DictionaryStoreError("cannot open dictionary store \(path): \(error)")
        }
        let total = try wrap { try pool.read { db in try Int.fetchOne(db, sql: "SELECT coalesce(sum(size), 0) FROM blobs") ?? 0 } }
        state.withLock { $0.totalBytes = total }
        try DirectoryStoreImport.run(into: self, directory: self.directory, logger: logger)
        let count = (try? pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM records") }) ?? 0
        logger.info("dictionary store opened", metadata: ["path": "\(path)", "records": "\(count ?? 0)", "bytes": "\(total)"])
    }

    private static func open(path: String, pageCacheBytes: Int, pageSize: Int, readers: Int, logger: Logger) throws -> DatabasePool {
        var config = Configuration()
        config.maximumReaderCount = max(1, readers)
        config.busyMode = .timeout(10)
        config.label = "dcserve.dictionary-store"
        let cacheKiB = max(64, pageCacheBytes >> 10)
        config.prepareDatabase { db in
            // Applies to a database being created only (an existing file keeps its page size).
            try db.execute(sql: "PRAGMA page_size = \(pageSize)")
            try db.execute(sql: "PRAGMA cache_size = -\(cacheKiB)")
        }
        let pool = try DatabasePool(path: path, configuration: config)
        let migrated = try pool.write { db in try SQLiteDictionarySchema.migrate(db) }
        if migrated.from != migrated.to {
            logger.notice("dictionary store schema created or migrated", metadata: ["from": "\(migrated.from)", "to": "\(migrated.to)"])
        }
        return pool
    }

    /// Runs `body`, turning database errors into ``DictionaryStoreError``s naming the file.
    private func wrap<T>(_ body: () throws -> T) throws(DictionaryStoreError) -> T {
        do { return try body() } catch let error as DictionaryStoreError { throw error } catch {
            throw DictionaryStoreError("dictionary store \(path): \(error)")
        }
    }

    // MARK: Columns

    /// The record columns, in the order ``metadata(from:hash:)`` reads them.
    private static let recordColumns = "r.partition, r.match, r.path_pattern, r.match_dest, r.dictionary_id, r.rule, r.source_path, r.first_served, r.last_served, r.max_age, r.expires, r.byte_size, r.hash"

    private static func metadata(from row: Row, hash: DictionaryHash) -> DictionaryMetadata {
        let partition: String = row[0]
        let destinations: String? = row[3]
        let maxAge: Int? = row[9]
        let expires: Double? = row[10]
        return DictionaryMetadata(
            hash: hash.hex, match: row[1], pathPattern: row[2],
            matchDestinations: destinations.map { $0.split(separator: SQLiteDictionarySchema.destinationSeparator,
                                                           omittingEmptySubsequences: false).map(String.init) } ?? [],
            id: row[4], rule: row[5], sourcePath: row[6],
            firstServed: Date(timeIntervalSince1970: row[7]), lastServed: Date(timeIntervalSince1970: row[8]),
            maxAge: maxAge, expires: expires.map { Date(timeIntervalSince1970: $0) }, byteSize: row[11],
            partition: partition.isEmpty ? nil : partition)
    }

    private static func destinations(_ list: [String]) -> String? {
        list.isEmpty ? nil : list.joined(separator: String(SQLiteDictionarySchema.destinationSeparator))
    }

    private static func partitionColumn(_ partition: String?) -> String { partition ?? "" }

    // MARK: DictionaryStore

    @discardableResult
    public func put(_ bytes: [UInt8], description: DictionaryDescription, now: Date) throws -> DictionaryHash {
        let hash = SHA256.hash(bytes)
        try put(batch: [DictionaryStoreWrite(bytes: bytes, hash: hash, description: description, now: now)])
        return hash
    }

    /// Stores the whole batch in one transaction (one fsync); nothing of it when it throws.
    public func put(batch: [DictionaryStoreWrite]) throws {
        for write in batch where write.bytes.count > maxDictionaryBytes {
            throw DictionaryStoreError("dictionary of \(write.bytes.count) bytes exceeds the store's limit of \(maxDictionaryBytes) bytes")
        }
        guard !batch.isEmpty else { return }
        let served = state.withLock { s -> [Key: Date] in defer { s.served = [:] }; return s.served }
        do {
            let (delta, removals) = try pool.write { db -> (Int, [DictionaryRemoval]) in
                try Self.writeServed(served, db)
                let insertBlob = try db.cachedStatement(sql: "INSERT INTO blobs (hash, size, bytes) VALUES (?, ?, ?) ON CONFLICT (hash) DO NOTHING")
                let upsert = try db.cachedStatement(sql: """
                    INSERT INTO records (partition, hash, match, path_pattern, match_dest, dictionary_id, rule, source_path,
                                         first_served, last_served, max_age, expires, byte_size)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (partition, hash) DO UPDATE SET
                        match = excluded.match, path_pattern = excluded.path_pattern, match_dest = excluded.match_dest,
                        dictionary_id = excluded.dictionary_id, rule = coalesce(excluded.rule, rule),
                        source_path = coalesce(excluded.source_path, source_path),
                        max_age = coalesce(excluded.max_age, max_age),
                        last_served = max(last_served, excluded.last_served),
                        expires = CASE WHEN coalesce(excluded.max_age, max_age) IS NULL THEN expires
                                       ELSE max(last_served, excluded.last_served) + coalesce(excluded.max_age, max_age) END,
                        byte_size = excluded.byte_size
                    """)
                var delta = 0
                for write in batch {
                    let hash = Data(write.hash.bytes)
                    let d = write.description
                    try write.bytes.withUnsafeBytes { raw in
                        let bytes = Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!),
                                         count: raw.count, deallocator: .none)
                        try insertBlob.execute(arguments: [hash, write.bytes.count, bytes])
                    }
                    if db.changesCount > 0 { delta += write.bytes.count }
                    let now = write.now.timeIntervalSince1970
                    try upsert.execute(arguments: [
                        Self.partitionColumn(d.partition), hash, d.pattern.source, d.pattern.pathname,
                        Self.destinations(d.matchDestinations), d.id?.value, d.rule, d.sourcePath,
                        now, now, d.maxAge, d.maxAge.map { now + Double($0) }, write.bytes.count,
                    ])
                }
                var removals: [DictionaryRemoval] = []
                if let maxBytes = retention.maxTotalBytes {
                    var total = state.withLock { $0.totalBytes } + delta
                    let before = total
                    try evict(db, toBudget: maxBytes, total: &total, now: batch[batch.count - 1].now, removals: &removals)
                    delta -= before - total
                }
                return (delta, removals)
            }
            state.withLock { s in
                s.totalBytes += delta
                s.removals += removals
                for (key, date) in served { s.remember(key, servedAt: date) }
                for write in batch { s.remember(Key(partition: Self.partitionColumn(write.description.partition), hash: write.hash), servedAt: write.now) }
                for removal in removals { s.recent[Key(partition: Self.partitionColumn(removal.partition), hash: removal.hash)] = nil }
            }
        } catch {
            state.withLock { s in s.served.merge(served) { newer, _ in newer } }
            throw DictionaryStoreError("cannot store \(batch.count) dictionar\(batch.count == 1 ? "y" : "ies") in \(path): \(error)")
        }
    }

    public func flush() throws {
        let served = state.withLock { s -> [Key: Date] in defer { s.served = [:] }; return s.served }
        guard !served.isEmpty else { return }
        do {
            try pool.write { db in try Self.writeServed(served, db) }
            state.withLock { s in for (key, date) in served { s.remember(key, servedAt: date) } }
        } catch {
            state.withLock { s in s.served.merge(served) { newer, _ in newer } }
            throw DictionaryStoreError("cannot write last-served times to \(path): \(error)")
        }
    }

    private static func writeServed(_ served: [Key: Date], _ db: Database) throws {
        guard !served.isEmpty else { return }
        let update = try db.cachedStatement(sql: """
            UPDATE records SET last_served = max(last_served, ?1),
                expires = CASE WHEN max_age IS NULL THEN expires ELSE max(last_served, ?1) + max_age END
            WHERE partition = ?2 AND hash = ?3
            """)
        for (key, date) in served {
            try update.execute(arguments: [date.timeIntervalSince1970, key.partition, Data(key.hash.bytes)])
        }
    }

    @discardableResult
    public func prune(now: Date) -> [DictionaryRemoval] {
        do { try flush() } catch { logger.error("\(error)") }
        let t = now.timeIntervalSince1970
        var removals: [DictionaryRemoval] = []
        do {
            let delta = try pool.write { db -> Int in
                var total = state.withLock { $0.totalBytes }
                let before = total
                if let keep = retention.keepPastExpiry {
                    let rows = try Row.fetchAll(db, sql: "SELECT partition, hash FROM records WHERE expires IS NOT NULL AND expires < ? ORDER BY last_served, hash, partition",
                                                arguments: [t - keep])
                    for row in rows { try remove(db, row, .expired, total: &total, removals: &removals) }
                }
                // The count cap bounds only expired dictionaries kept past expiry: a fresh one may still
                // be named by any client that fetched it, so only the byte budget removes fresh ones.
                if let perRule = retention.maxCountPerRule {
                    let over = try Row.fetchAll(db, sql: "SELECT coalesce(rule, ''), count(*) FROM records GROUP BY coalesce(rule, '') HAVING count(*) > ?",
                                                arguments: [perRule])
                    for rule in over {
                        let name: String = rule[0], count: Int = rule[1]
                        let rows = try Row.fetchAll(db, sql: """
                            SELECT partition, hash FROM records
                            WHERE coalesce(rule, '') = ? AND expires IS NOT NULL AND expires < ?
                            ORDER BY last_served, hash, partition LIMIT ?
                            """, arguments: [name, t, count - perRule])
                        for row in rows { try remove(db, row, .ruleCount, total: &total, removals: &removals) }
                    }
                }
                if let maxBytes = retention.maxTotalBytes {
                    try evict(db, toBudget: maxBytes, total: &total, now: now, removals: &removals)
                }
                return total - before
            }
            state.withLock { $0.totalBytes += delta }
        } catch {
            logger.error("cannot apply retention to the dictionary store", metadata: ["path": "\(path)", "error": "\(error)"])
        }
        let earlier = state.withLock { s -> [DictionaryRemoval] in defer { s.removals = [] }; return s.removals }
        removals = earlier + removals
        if removals.count <= 16 {
            for removal in removals {
                logger.info("dictionary removed by retention", metadata: ["hash": "\(removal.hash.hex)", "reason": "\(removal.reason.rawValue)"])
            }
        } else {
            let reasons = Dictionary(grouping: removals, by: \.reason).map { "\($0.key.rawValue): \($0.value.count)" }.sorted()
            logger.info("dictionaries removed by retention", metadata: ["count": "\(removals.count)", "reasons": "\(reasons.joined(separator: ", "))"])
        }
        return removals
    }

    /// Removes records, expired ones first then the least recently served, until the blobs' total is
    /// within `maxBytes`.
    private func evict(_ db: Database, toBudget maxBytes: Int, total: inout Int, now: Date,
                       removals: inout [DictionaryRemoval]) throws {
        guard total > maxBytes else { return }
        let t = now.timeIntervalSince1970
        let expired = try db.cachedStatement(sql: """
            SELECT partition, hash FROM records WHERE expires IS NOT NULL AND expires < ?
            ORDER BY last_served, hash, partition LIMIT 256
            """)
        let oldest = try db.cachedStatement(sql: "SELECT partition, hash FROM records ORDER BY last_served, hash, partition LIMIT 256")
        for (statement, arguments) in [(expired, [t] as StatementArguments), (oldest, StatementArguments())] {
            while total > maxBytes {
                let rows = try Row.fetchAll(statement, arguments: arguments)
                if rows.isEmpty { break }
                for row in rows where total > maxBytes { try remove(db, row, .totalBytes, total: &total, removals: &removals) }
            }
        }
    }

    /// Removes the record of `row` (partition, hash), and its blob when it was the last record of it.
    private func remove(_ db: Database, _ row: Row, _ reason: DictionaryRemoval.Reason, total: inout Int,
                        removals: inout [DictionaryRemoval]) throws {
        let partition: String = row[0], hashData: Data = row[1]
        try remove(db, partition: partition, hashData: hashData, reason, total: &total, removals: &removals)
    }

    /// Removes the record of (`partition`, `hashData`), and its blob when it was the last record of it.
    private func remove(_ db: Database, partition: String, hashData: Data, _ reason: DictionaryRemoval.Reason, total: inout Int,
                        removals: inout [DictionaryRemoval]) throws {
        guard let hash = DictionaryHash(bytes: hashData) else { return }
        try db.cachedStatement(sql: "DELETE FROM records WHERE partition = ? AND hash = ?").execute(arguments: [partition, hashData])
        guard db.changesCount > 0 else { return }
        state.withLock { s in
            s.served[Key(partition: partition, hash: hash)] = nil
            s.recent[Key(partition: partition, hash: hash)] = nil
        }
        removals.append(DictionaryRemoval(hash: hash, reason: reason, partition: partition.isEmpty ? nil : partition))
        let freed = try Int.fetchOne(db.cachedStatement(sql: """
            DELETE FROM blobs WHERE hash = ?1 AND NOT EXISTS (SELECT 1 FROM records WHERE hash = ?1) RETURNING size
            """), arguments: [hashData])
        total -= freed ?? 0
    }

    @discardableResult
    public func remove(_ records: [(hash: DictionaryHash, partition: String?)]) -> Int {
        guard !records.isEmpty else { return 0 }
        do {
            let (delta, count) = try pool.write { db -> (Int, Int) in
                var total = state.withLock { $0.totalBytes }
                let before = total
                var removals: [DictionaryRemoval] = []
                for record in records {
                    try remove(db, partition: Self.partitionColumn(record.partition), hashData: Data(record.hash.bytes), .totalBytes,
                               total: &total, removals: &removals)
                }
                return (total - before, removals.count)
            }
            state.withLock { $0.totalBytes += delta }
            return count
        } catch {
            logger.error("cannot remove dictionaries no longer retained", metadata: ["path": "\(path)", "error": "\(error)"])
            return 0
        }
    }

    /// Every stored hash, once whatever the number of partitions holding it.
    public var hashes: [DictionaryHash] {
        (try? pool.read { db in try Data.fetchAll(db, sql: "SELECT hash FROM blobs").compactMap { DictionaryHash(bytes: $0) } }) ?? []
    }

    public var dictionaryCount: Int {
        (try? pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM blobs") }) ?? 0
    }

    public func get(_ hash: DictionaryHash, partition: String?) -> StoredDictionary? {
        let key = Key(partition: Self.partitionColumn(partition), hash: hash)
        let found: (DictionaryMetadata, [UInt8], DictionaryHash)?
        do {
            found = try pool.read { db in
                let statement = try db.cachedStatement(sql: """
                    SELECT \(Self.recordColumns), b.bytes FROM records r JOIN blobs b ON b.hash = r.hash
                    WHERE r.partition = ? AND r.hash = ?
                    """)
                // The cursor's row reads the statement in place (no copy of the bytes): keep it open.
                let cursor = try Row.fetchCursor(statement, arguments: [key.partition, Data(hash.bytes)])
                guard let row = try cursor.next() else { return nil }
                let record = Self.metadata(from: row, hash: hash)
                guard let data = row.dataNoCopy(atIndex: 13) else { return (record, [], SHA256.hash([UInt8]())) }
                return (record, [UInt8](data), SHA256.hash(data))
            }
        } catch {
            logger.error("cannot read a dictionary from the store", metadata: ["path": "\(path)", "hash": "\(hash.hex)", "error": "\(error)"])
            return nil
        }
        guard var (record, bytes, actual) = found else { return nil }
        guard actual == hash else {
            quarantine(hash, reason: "SHA-256 of the stored bytes is \(actual.hex)")
            return nil
        }
        if let served = state.withLock({ $0.served[key] }), served > record.lastServed { Self.serve(&record, at: served) }
        record.byteSize = bytes.count
        return StoredDictionary(hash: hash, bytes: bytes, metadata: record)
    }

    public func metadata(_ hash: DictionaryHash, partition: String?) -> DictionaryMetadata? {
        let key = Key(partition: Self.partitionColumn(partition), hash: hash)
        guard var record = try? pool.read({ db -> DictionaryMetadata? in
            let statement = try db.cachedStatement(sql: "SELECT \(Self.recordColumns) FROM records r WHERE r.partition = ? AND r.hash = ?")
            return try Row.fetchOne(statement, arguments: [key.partition, Data(hash.bytes)]).map { Self.metadata(from: $0, hash: hash) }
        }) else { return nil }
        if let served = state.withLock({ $0.served[key] }), served > record.lastServed { Self.serve(&record, at: served) }
        return record
    }

    @discardableResult
    public func recordServed(_ hash: DictionaryHash, partition: String?, at date: Date) -> Bool {
        let key = Key(partition: Self.partitionColumn(partition), hash: hash)
        let pending: Bool = state.withLock { s in
            guard let last = s.served[key] ?? s.recent[key] else { return false }
            if date.timeIntervalSince(last) >= 1 { s.served[key] = date }
            return true
        }
        if pending { return true }
        let lastServed = try? pool.read { db in
            try Double.fetchOne(db.cachedStatement(sql: "SELECT last_served FROM records WHERE partition = ? AND hash = ?"),
                                arguments: [key.partition, Data(hash.bytes)])
        }
        guard let last = lastServed else { return false }
        // Remembered either way (the stored time when it is less than a second old): a hot dictionary
        // is read from the database once per flush, not on every request that names it.
        let newest = date.timeIntervalSince1970 - last >= 1 ? date : Date(timeIntervalSince1970: last)
        state.withLock { s in if s.served[key].map({ $0 < newest }) ?? true { s.served[key] = newest } }
        return true
    }

    public var records: [DictionaryMetadata] {
        do {
            let stored = try pool.read { db in
                try Row.fetchAll(db, sql: "SELECT \(Self.recordColumns) FROM records r").compactMap { row -> DictionaryMetadata? in
                    guard let hash = DictionaryHash(bytes: row[12] as Data) else { return nil }
                    return Self.metadata(from: row, hash: hash)
                }
            }
            let served = state.withLock { $0.served }
            guard !served.isEmpty else { return stored }
            return stored.map { record in
                guard let hash = DictionaryHash(hex: Substring(record.hash)),
                      let date = served[Key(partition: Self.partitionColumn(record.partition), hash: hash)],
                      date > record.lastServed else { return record }
                var record = record
                Self.serve(&record, at: date)
                return record
            }
        } catch {
            logger.error("cannot list the dictionary store's records", metadata: ["path": "\(path)", "error": "\(error)"])
            return []
        }
    }

    /// Sum of the sizes of the stored dictionaries, each hash once (for metrics and the byte budget).
    public var totalByteCount: Int { state.withLock { $0.totalBytes } }

    /// Returns SQLite's caches of every connection, and the pairs remembered as held, to the allocator
    /// (after traffic stops; `recordServed` then reads what it no longer remembers).
    public func releaseMemory() {
        state.withLock { $0.recent = [:] }
        pool.releaseMemory()
    }

    /// Memory SQLite holds now, all connections of the process (its page caches, statements, schema).
    public var cacheBytes: Int? { Int(sqlite3_memory_used()) }

    /// Closes the database (the store must not be used afterwards). Unwritten `last_served` times are
    /// lost unless ``flush()`` ran first.
    public func close() throws { try pool.close() }

    // MARK: Internals

    private static func serve(_ record: inout DictionaryMetadata, at date: Date) {
        record.lastServed = date
        if let maxAge = record.maxAge { record.expires = date.addingTimeInterval(TimeInterval(maxAge)) }
    }

    /// Moves the bytes of `hash` into the `quarantine` table and removes its records; logs why.
    private func quarantine(_ hash: DictionaryHash, reason: String) {
        let hashData = Data(hash.bytes)
        do {
            let freed = try pool.write { db -> Int in
                try db.execute(sql: "INSERT INTO quarantine (hash, bytes, reason, at) SELECT hash, bytes, ?, ? FROM blobs WHERE hash = ?",
                               arguments: [reason, Date().timeIntervalSince1970, hashData])
                try db.execute(sql: "DELETE FROM records WHERE hash = ?", arguments: [hashData])
                return try Int.fetchOne(db, sql: "DELETE FROM blobs WHERE hash = ? RETURNING size", arguments: [hashData]) ?? 0
            }
            state.withLock { s in
                s.totalBytes -= freed
                s.served = s.served.filter { $0.key.hash != hash }
                s.recent = s.recent.filter { $0.key.hash != hash }
            }
        } catch {
            logger.error("cannot quarantine a corrupted dictionary", metadata: ["hash": "\(hash.hex)", "error": "\(error)"])
        }
        logger.error("dictionary bytes corrupted; quarantined, never used",
                     metadata: ["hash": "\(hash.hex)", "reason": "\(reason)", "path": "\(path)"])
    }

    /// Writes imported dictionaries (``DirectoryStoreImport``): records already present are kept.
    func importRecords(_ stored: [StoredDictionary]) throws {
        guard !stored.isEmpty else { return }
        let delta = try wrap {
            try pool.write { db -> Int in
                var delta = 0
                for s in stored {
                    let hash = Data(s.hash.bytes), m = s.metadata
                    try db.execute(sql: "INSERT INTO blobs (hash, size, bytes) VALUES (?, ?, ?) ON CONFLICT (hash) DO NOTHING",
                                   arguments: [hash, s.bytes.count, Data(s.bytes)])
                    if db.changesCount > 0 { delta += s.bytes.count }
                    try db.execute(sql: """
                        INSERT INTO records (partition, hash, match, path_pattern, match_dest, dictionary_id, rule, source_path,
                                             first_served, last_served, max_age, expires, byte_size)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (partition, hash) DO NOTHING
                        """, arguments: [
                            Self.partitionColumn(m.partition), hash, m.match, m.pathPattern, Self.destinations(m.matchDestinations),
                            m.id, m.rule, m.sourcePath, m.firstServed.timeIntervalSince1970, m.lastServed.timeIntervalSince1970,
                            m.maxAge, m.expires?.timeIntervalSince1970, s.bytes.count,
                        ])
                }
                return delta
            }
        }
        state.withLock { $0.totalBytes += delta }
    }
}
