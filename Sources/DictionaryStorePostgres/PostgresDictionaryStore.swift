import CoreMetrics
import DictionaryCodec
import DictionaryTransport
import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO
import Locking

/// A ``DictionaryStore`` in PostgreSQL, shared by every dcserve instance connected to the database.
///
/// Rows: see ``PostgresDictionarySchema`` (created and migrated at `init`). Every instance keeps the
/// records (not the bytes) of all dictionaries in memory, loaded at start and kept current through
/// `LISTEN/NOTIFY` on one dedicated connection (a `put` on another instance is known here as soon as
/// its notification arrives, typically within milliseconds). So `metadata`, `recordServed` and
/// `hashes` never touch the database, and a hash nobody stored costs no query.
///
/// - `put` writes the row (upsert, one round trip) and only returns once PostgreSQL committed it;
///   while the store is disconnected it throws at once (the caller must not advertise the dictionary).
/// - `get` reads the bytes (one query), verifies their SHA-256 and returns nil for a corrupted row,
///   which is remembered and not read again until the row is stored anew.
///   Callers put a local cache in front (``TieredDictionaryStore``).
/// - `recordServed` updates memory; ``flush()`` writes every pending `last_served` in one statement.
/// - ``prune(now:)`` applies ``DictionaryRetention`` inside a transaction holding an advisory lock:
///   one instance prunes at a time; the others skip (and learn of the removals by notification).
///
/// Faults: when the listening connection fails, the store is ``Status-swift.struct/connected``
/// false (degraded), reconnects with exponential back-off (0.2 s … 5 s) and, once reconnected,
/// reloads every record (catching up with what it missed: observers hear of the rows removed and
/// stored meanwhile, as if notified).
///
/// Thread-safety: all state behind one `Locked`; the synchronous methods block the calling thread
/// on database work (never longer than the connect timeout) and must not be called from Swift
/// concurrency tasks (dcserve calls them from its event loops and housekeeping queue).
public final class PostgresDictionaryStore: DictionaryStore {
    /// Whether the store is reachable, for `/readyz` and logs.
    public struct Status: Sendable {
        public var connected: Bool
        /// When the current state began.
        public var since: Date
        /// The last connection error, if disconnected.
        public var lastError: String?
    }

    /// A change another instance (or this one) made, as learnt from the database; `partition` nil =
    /// a shared dictionary.
    public enum Change: Sendable, Equatable {
        case stored(DictionaryHash, partition: String?)
        case removed(DictionaryHash, partition: String?)
    }

    /// A row's identity: (partition, hash). The same bytes may be stored under several partitions,
    /// each its own row and record.
    struct RowKey: Hashable, Sendable {
        var partition: String?
        var hash: DictionaryHash
    }

    public let settings: PostgresStoreSettings
    public let retention: DictionaryRetention
    private let logger: Logger
    let client: PostgresClient
    private let connectionConfiguration: PostgresConnection.Configuration
    private let tasks = Locked<[Task<Void, Never>]>([])
    private let state = Locked(State())
    private let observers = Locked<[@Sendable (Change) -> Void]>([])
    private let metrics = Metrics()

    private struct State {
        var index: [RowKey: DictionaryMetadata] = [:]
        var dirty: [RowKey: Date] = [:]
        var corrupted = Set<RowKey>()
        /// Rows per hash (for `hashes`, and to forget a hash's library entry only when its last row goes).
        var partitionsByHash: [DictionaryHash: Int] = [:]

        mutating func set(_ key: RowKey, _ record: DictionaryMetadata) {
            if index.updateValue(record, forKey: key) == nil { partitionsByHash[key.hash, default: 0] += 1 }
        }

        @discardableResult
        mutating func remove(_ key: RowKey) -> DictionaryMetadata? {
            dirty[key] = nil
            guard let old = index.removeValue(forKey: key) else { return nil }
            let left = (partitionsByHash[key.hash] ?? 1) - 1
            partitionsByHash[key.hash] = left > 0 ? left : nil
            return old
        }

        mutating func replaceAll(_ records: [RowKey: DictionaryMetadata]) {
            index = records
            partitionsByHash = [:]
            for key in records.keys { partitionsByHash[key.hash, default: 0] += 1 }
        }
        var status = Status(connected: false, since: Date(), lastError: nil)
        var stopped = false
    }

    private struct Metrics {
        let up = Gauge(label: "dcserve_store_postgres_up")
        let reconnects = Counter(label: "dcserve_store_postgres_reconnects_total")
        let notifications = Counter(label: "dcserve_store_postgres_notifications_total")
        let fetches = Counter(label: "dcserve_store_postgres_fetches_total")
        let corrupted = Counter(label: "dcserve_store_corrupted_total", dimensions: [("tier", "postgres")])
        let putFailures = Counter(label: "dcserve_store_postgres_errors_total", dimensions: [("operation", "put")])
        let getFailures = Counter(label: "dcserve_store_postgres_errors_total", dimensions: [("operation", "get")])
        let flushFailures = Counter(label: "dcserve_store_postgres_errors_total", dimensions: [("operation", "flush")])
        let pruneFailures = Counter(label: "dcserve_store_postgres_errors_total", dimensions: [("operation", "prune")])
    }

    /// Connects, migrates the schema, loads every record and starts listening for changes.
    /// Throws a ``DictionaryStorePostgresError`` naming the server (never the password) when PostgreSQL
    /// cannot be reached within `settings.connectTimeoutSeconds` or the schema is newer than this build.
    public init(settings: PostgresStoreSettings, retention: DictionaryRetention = DictionaryRetention(),
                logger: Logger = Logger(label: "dcserve.dictionary-store.postgres")) throws {
        self.settings = settings
        self.retention = retention
        self.logger = logger
        let tls: PostgresConnection.Configuration.TLS
        let poolTLS: PostgresClient.Configuration.TLS
        do {
            switch settings.tls {
            case .disable:
                tls = .disable
                poolTLS = .disable
            case .prefer:
                var c = TLSConfiguration.makeClientConfiguration()
                c.certificateVerification = .none  // opportunistic, like libpq's sslmode=prefer
                tls = try .prefer(NIOSSLContext(configuration: c))
                poolTLS = .prefer(c)
            case .require:
                let c = TLSConfiguration.makeClientConfiguration()
                tls = try .require(NIOSSLContext(configuration: c))
                poolTLS = .require(c)
            }
        } catch {
            throw DictionaryStorePostgresError("cannot set up TLS for PostgreSQL: \(error)")
        }
        var connection = PostgresConnection.Configuration(host: settings.host, port: settings.port, username: settings.username,
                                                          password: settings.password, database: settings.database, tls: tls)
        connection.options.connectTimeout = .milliseconds(Int64(settings.connectTimeoutSeconds * 1000))
        connectionConfiguration = connection
        var pool = PostgresClient.Configuration(host: settings.host, port: settings.port, username: settings.username,
                                                password: settings.password, database: settings.database, tls: poolTLS)
        pool.options.maximumConnections = settings.poolSize
        pool.options.connectTimeout = .milliseconds(Int64(settings.connectTimeoutSeconds * 1000))
        client = PostgresClient(configuration: pool, backgroundLogger: logger)

        let client = self.client
        let runner = Task { await client.run() }
        tasks.withLock { $0.append(runner) }
        do {
            // One direct connection first: an unreachable server or bad credentials fail fast, with
            // the server's reason (the pool would retry quietly).
            let records = try blockingAwait(timeout: settings.connectTimeoutSeconds + 5, what: "start") { [logger, connection] in
                let direct = try await PostgresConnection.connect(configuration: connection, id: 0, logger: logger)
                do {
                    try await PostgresDictionarySchema.migrate(on: direct, logger: logger)
                    let records = try await Self.loadRecords(on: direct, logger: logger)
                    try await direct.close()
                    return records
                } catch {
                    try? await direct.close()
                    throw error
                }
            }
            state.withLock { $0.replaceAll(records) }
        } catch {
            runner.cancel()
            throw DictionaryStorePostgresError("cannot open the PostgreSQL dictionary store at \(settings): \(Self.describe(error))")
        }
        logger.info("PostgreSQL dictionary store opened", metadata: ["server": "\(settings)", "dictionaries": "\(hashes.count)"])
        // Holds the store until `shutdown()` cancels it.
        let listener = Task { await self.listenLoop() }
        tasks.withLock { $0.append(listener) }
        // The listener reports `connected` once LISTEN is active; wait briefly so `put` works at once.
        let deadline = Date().addingTimeInterval(settings.connectTimeoutSeconds)
        while !status.connected && Date() < deadline { usleep(10_000) }
    }

    /// Stops listening and closes the connections. The store answers from memory afterwards; writes fail.
    public func shutdown() {
        state.withLock { $0.stopped = true }
        for task in tasks.withLock({ $0 }) { task.cancel() }
    }

    deinit { for task in tasks.withLock({ $0 }) { task.cancel() } }

    public var status: Status { state.withLock { $0.status } }

    /// Calls `observer` (on a background task) for every change learnt from the database.
    public func observe(_ observer: @escaping @Sendable (Change) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    // MARK: DictionaryStore

    @discardableResult
    public func put(_ bytes: [UInt8], description: DictionaryDescription, now: Date) throws -> DictionaryHash {
        let hash = SHA256.hash(bytes)
        let key = RowKey(partition: description.partition, hash: hash)
        guard status.connected else {
            metrics.putFailures.increment()
            throw DictionaryStoreError("PostgreSQL dictionary store is unreachable (\(status.lastError ?? "disconnected")); not stored")
        }
        let hex = hash.hex
        let buffer = ByteBuffer(bytes: bytes)
        let d = description
        let expires = d.maxAge.map { now.addingTimeInterval(TimeInterval($0)) }
        let client = self.client, logger = self.logger
        let record: DictionaryMetadata
        do {
            record = try blockingAwait(timeout: settings.connectTimeoutSeconds, what: "store") {
                let rows = try await client.query("""
                    WITH up AS (
                        INSERT INTO dcserve_dictionaries AS d (partition, hash, bytes, byte_size, match, path_pattern, match_dest,
                            dictionary_id, rule, source_path, first_served, last_served, max_age, expires)
                        VALUES (\(d.partition), \(hex), \(buffer), \(bytes.count), \(d.pattern.source), \(d.pattern.pathname),
                            \(d.matchDestinations), \(d.id?.value), \(d.rule), \(d.sourcePath), \(now), \(now), \(d.maxAge), \(expires))
                        ON CONFLICT ON CONSTRAINT dcserve_dictionaries_key DO UPDATE SET
                            -- a row whose bytes no longer match its hash is repaired by storing it again
                            bytes = CASE WHEN encode(sha256(d.bytes), 'hex') = d.hash THEN d.bytes ELSE EXCLUDED.bytes END,
                            byte_size = EXCLUDED.byte_size,
                            match = EXCLUDED.match, path_pattern = EXCLUDED.path_pattern, match_dest = EXCLUDED.match_dest,
                            dictionary_id = EXCLUDED.dictionary_id,
                            rule = COALESCE(EXCLUDED.rule, d.rule), source_path = COALESCE(EXCLUDED.source_path, d.source_path),
                            max_age = COALESCE(EXCLUDED.max_age, d.max_age),
                            last_served = GREATEST(d.last_served, EXCLUDED.last_served),
                            expires = CASE WHEN COALESCE(EXCLUDED.max_age, d.max_age) IS NULL THEN d.expires
                                ELSE GREATEST(d.last_served, EXCLUDED.last_served)
                                    + make_interval(secs => COALESCE(EXCLUDED.max_age, d.max_age)) END
                        RETURNING \(unescaped: Self.recordColumns)
                    )
                    SELECT \(unescaped: Self.recordColumns), pg_notify(\(PostgresDictionarySchema.channel), \(unescaped: Self.notifyPayload("stored"))) FROM up
                    """, logger: logger)
                var found: DictionaryMetadata?
                for try await row in rows { found = try Self.record(from: row) }
                guard let found else { throw DictionaryStorePostgresError("the upsert returned no row") }
                return found
            }
        } catch {
            metrics.putFailures.increment()
            throw DictionaryStoreError("cannot store dictionary \(hex) in PostgreSQL: \(Self.describe(error))")
        }
        state.withLock { state in
            state.set(key, record)
            state.corrupted.remove(key)
        }
        logger.debug("stored dictionary", metadata: ["hash": "\(hex)", "bytes": "\(bytes.count)"])
        return hash
    }

    public func get(_ hash: DictionaryHash, partition: String?) -> StoredDictionary? {
        let key = RowKey(partition: partition, hash: hash)
        let known: Bool = state.withLock { $0.index[key] != nil && !$0.corrupted.contains(key) }
        guard known, status.connected else { return nil }
        let hex = hash.hex, client = self.client, logger = self.logger
        let fetched: ([UInt8], DictionaryMetadata)?
        do {
            fetched = try blockingAwait(timeout: settings.connectTimeoutSeconds, what: "read") {
                let rows = try await client.query(
                    "SELECT bytes, \(unescaped: Self.recordColumns) FROM dcserve_dictionaries WHERE partition IS NOT DISTINCT FROM \(partition) AND hash = \(hex)",
                    logger: logger)
                var found: ([UInt8], DictionaryMetadata)?
                for try await row in rows {
                    var buffer = try row.decode(ByteBuffer.self)
                    found = (buffer.readBytes(length: buffer.readableBytes) ?? [], try Self.record(from: row, offset: 1))
                }
                return found
            }
        } catch {
            metrics.getFailures.increment()
            logger.warning("cannot read dictionary from PostgreSQL", metadata: ["hash": "\(hex)", "error": "\(Self.describe(error))"])
            return nil
        }
        metrics.fetches.increment()
        guard let (bytes, record) = fetched else {
            // Removed meanwhile (its notification is on the way).
            _ = state.withLock { $0.remove(key) }
            return nil
        }
        let actual = SHA256.hash(bytes)
        guard actual == hash else {
            state.withLock { _ = $0.corrupted.insert(key) }
            metrics.corrupted.increment()
            logger.error("dictionary row in PostgreSQL is corrupted (SHA-256 mismatch); never used",
                         metadata: ["hash": "\(hex)", "actual": "\(actual.hex)"])
            return nil
        }
        return StoredDictionary(hash: hash, bytes: bytes, metadata: record)
    }

    public func metadata(_ hash: DictionaryHash, partition: String?) -> DictionaryMetadata? {
        let key = RowKey(partition: partition, hash: hash)
        return state.withLock { $0.corrupted.contains(key) ? nil : $0.index[key] }
    }

    public var records: [DictionaryMetadata] { state.withLock { Array($0.index.values) } }

    /// Whether the row for (`partition`, `hash`) was found corrupted (until stored again).
    public func isCorrupted(_ hash: DictionaryHash, partition: String? = nil) -> Bool {
        state.withLock { $0.corrupted.contains(RowKey(partition: partition, hash: hash)) }
    }

    @discardableResult
    public func recordServed(_ hash: DictionaryHash, partition: String?, at date: Date) -> Bool {
        let hash = RowKey(partition: partition, hash: hash)
        return state.withLock { state in
            guard let i = state.index.index(forKey: hash) else { return false }
            if state.index.values[i].noteServed(at: date) { state.dirty[hash] = date }  // in place: no record copy
            return true
        }
    }

    /// Writes every pending `last_served` (and the `expires` it implies) in one statement. While
    /// disconnected the updates stay pending and this throws.
    public func flush() throws {
        let pending: [RowKey: Date] = state.withLock { state in
            defer { state.dirty.removeAll() }
            return state.dirty
        }
        guard !pending.isEmpty else { return }
        let keys = Array(pending.keys)
        // Arrays of optionals do not encode: '' stands for NULL (never a partition id).
        let hexes = keys.map(\.hash.hex), partitions = keys.map { $0.partition ?? "" }
        let dates = keys.map { pending[$0]!.timeIntervalSince1970 }
        let client = self.client, logger = self.logger
        do {
            guard status.connected else { throw DictionaryStorePostgresError("disconnected") }
            try blockingAwait(timeout: settings.connectTimeoutSeconds, what: "flush") {
                try await client.query("""
                    UPDATE dcserve_dictionaries AS d SET
                        last_served = GREATEST(d.last_served, to_timestamp(u.served)),
                        expires = CASE WHEN d.max_age IS NULL THEN d.expires
                            ELSE GREATEST(d.last_served, to_timestamp(u.served)) + make_interval(secs => d.max_age) END
                    FROM unnest(\(hexes)::text[], \(partitions)::text[], \(dates)::float8[]) AS u(hash, partition, served)
                    WHERE d.partition IS NOT DISTINCT FROM NULLIF(u.partition, '') AND d.hash = u.hash
                    """, logger: logger)
            }
        } catch {
            metrics.flushFailures.increment()
            state.withLock { state in
                for (hash, date) in pending where state.index[hash] != nil {
                    state.dirty[hash] = max(state.dirty[hash] ?? date, date)
                }
            }
            throw DictionaryStoreError("cannot write last-served times to PostgreSQL: \(Self.describe(error))")
        }
    }

    /// Applies retention to the rows if no other instance is doing so right now; returns what this
    /// call removed (empty when skipped or disconnected). Other instances learn of the removals by
    /// notification.
    @discardableResult
    public func prune(now: Date) -> [DictionaryRemoval] {
        guard status.connected else { return [] }
        let client = self.client, logger = self.logger, retention = self.retention
        let removals: [DictionaryRemoval]
        do {
            removals = try blockingAwait(timeout: settings.connectTimeoutSeconds * 2, what: "retention") {
                try await client.withTransaction(logger: logger) { connection -> [DictionaryRemoval] in
                    var locked = false
                    for try await got in try await connection.query(
                        "SELECT pg_try_advisory_xact_lock(\(PostgresDictionarySchema.retentionLock))", logger: logger).decode(Bool.self) {
                        locked = got
                    }
                    guard locked else { return [] }
                    var records: [RetentionPlan.Record] = []
                    let rows = try await connection.query(
                        "SELECT hash, partition, rule, byte_size, last_served, expires FROM dcserve_dictionaries",
                        logger: logger)
                    for try await (hex, partition, rule, size, lastServed, expires)
                        in rows.decode((String, String?, String?, Int, Date, Date?).self) {
                        guard let hash = DictionaryHash(hex: Substring(hex)) else { continue }
                        records.append(.init(hash: hash, partition: partition, rule: rule, byteSize: size,
                                             lastServed: lastServed, expires: expires))
                    }
                    let removals = RetentionPlan.removals(records, retention: retention, now: now)
                    guard !removals.isEmpty else { return [] }
                    let hexes = removals.map(\.hash.hex), partitions = removals.map { $0.partition ?? "" }
                    try await connection.query("""
                        WITH gone AS (
                            DELETE FROM dcserve_dictionaries AS d USING unnest(\(hexes)::text[], \(partitions)::text[]) AS u(hash, partition)
                            WHERE d.partition IS NOT DISTINCT FROM NULLIF(u.partition, '') AND d.hash = u.hash
                            RETURNING d.hash, d.partition
                        )
                        SELECT pg_notify(\(PostgresDictionarySchema.channel), \(unescaped: Self.notifyPayload("removed"))) FROM gone
                        """, logger: logger)
                    return removals
                }
            }
        } catch {
            metrics.pruneFailures.increment()
            logger.error("cannot apply retention in PostgreSQL", metadata: ["error": "\(Self.describe(error))"])
            return []
        }
        state.withLock { state in
            for removal in removals { state.remove(RowKey(partition: removal.partition, hash: removal.hash)) }
        }
        for removal in removals {
            logger.info("dictionary removed by retention", metadata: [
                "hash": "\(removal.hash.hex)", "reason": "\(removal.reason.rawValue)", "partition": "\(removal.partition ?? "-")"])
            notify(.removed(removal.hash, partition: removal.partition))
        }
        return removals
    }

    public var hashes: [DictionaryHash] { state.withLock { Array($0.partitionsByHash.keys) } }

    /// Whether any partition (or the shared one) still holds `hash`.
    public func holdsAnyRow(_ hash: DictionaryHash) -> Bool { state.withLock { $0.partitionsByHash[hash] != nil } }

    /// Sum of the sizes of all stored dictionaries (for metrics).
    public var totalByteCount: Int { state.withLock { $0.index.values.reduce(0) { $0 + $1.byteSize } } }

    // MARK: Listening

    private func listenLoop() async {
        var backoff = 0.2
        var attempt = 0
        while !Task.isCancelled && !state.withLock({ $0.stopped }) {
            attempt += 1
            if attempt > 1 { metrics.reconnects.increment() }
            do {
                let connection = try await PostgresConnection.connect(
                    configuration: connectionConfiguration, id: attempt, logger: logger)
                do {
                    try await connection.listen(on: PostgresDictionarySchema.channel) { notifications in
                        // LISTEN is active: reload everything, so nothing stored meanwhile is missed.
                        try await self.reload(on: connection)
                        self.setConnected(true, error: nil)
                        backoff = 0.2
                        for try await notification in notifications {
                            self.metrics.notifications.increment()
                            try await self.handle(notification.payload, on: connection)
                        }
                    }
                    throw DictionaryStorePostgresError("notification stream ended")
                } catch {
                    try? await connection.close()
                    throw error
                }
            } catch {
                if Task.isCancelled { break }
                setConnected(false, error: Self.describe(error))
            }
            try? await Task.sleep(for: .milliseconds(Int(backoff * 1000)))
            backoff = min(backoff * 2, 5)
        }
        setConnected(false, error: "stopped")
    }

    private func setConnected(_ connected: Bool, error: String?) {
        let changed: Bool = state.withLock { state in
            let changed = state.status.connected != connected
            if changed { state.status = Status(connected: connected, since: Date(), lastError: error) }
            else if !connected { state.status.lastError = error }
            return changed
        }
        metrics.up.record(connected ? 1 : 0)
        guard changed else { return }
        if state.withLock({ $0.stopped }) {
            logger.info("PostgreSQL dictionary store closed", metadata: ["server": "\(settings)"])
        } else if connected {
            logger.notice("PostgreSQL dictionary store connected", metadata: ["server": "\(settings)"])
        } else {
            logger.error("PostgreSQL dictionary store unreachable; serving from the local cache, reconnecting",
                         metadata: ["server": "\(settings)", "error": "\(error ?? "")"])
        }
    }

    /// Every dictionary's record, of every partition (no bytes).
    private static func loadRecords(on connection: PostgresConnection, logger: Logger) async throws
        -> [RowKey: DictionaryMetadata] {
        var records: [RowKey: DictionaryMetadata] = [:]
        let rows = try await connection.query(
            "SELECT \(unescaped: Self.recordColumns) FROM dcserve_dictionaries", logger: logger)
        for try await row in rows {
            let record = try Self.record(from: row)
            if let hash = DictionaryHash(hex: Substring(record.hash)) { records[RowKey(partition: record.partition, hash: hash)] = record }
        }
        return records
    }

    private func reload(on connection: PostgresConnection) async throws {
        var records = try await Self.loadRecords(on: connection, logger: logger)
        let (removed, added): ([RowKey], [RowKey]) = state.withLock { state in
            let removed = state.index.keys.filter { records[$0] == nil }
            // Stored while this instance was not listening, oldest first (the order they were made).
            let added = records.filter { state.index[$0.key] == nil }.sorted { $0.value.firstServed < $1.value.firstServed }.map(\.key)
            for (key, var record) in records {
                // Keep this instance's newer, not yet flushed, last-served time.
                if let pending = state.dirty[key], pending > record.lastServed { record.lastServed = pending }
                records[key] = record
            }
            state.replaceAll(records)
            state.corrupted.removeAll()
            for key in removed { state.dirty[key] = nil }
            return (removed, added)
        }
        for key in removed { notify(.removed(key.hash, partition: key.partition)) }
        for key in added { notify(.stored(key.hash, partition: key.partition)) }
    }

    private func handle(_ payload: String, on connection: PostgresConnection) async throws {
        // `<verb> <hex>` (shared) or `<verb> <hex> <partition>` (partition ids contain no space).
        let parts = payload.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let hash = DictionaryHash(hex: parts[1]) else {
            logger.warning("ignored unknown notification", metadata: ["payload": "\(payload.prefix(100))"])
            return
        }
        let partition = parts.count == 3 ? String(parts[2]) : nil
        let key = RowKey(partition: partition, hash: hash)
        switch parts[0] {
        case "stored":
            let rows = try await connection.query(
                "SELECT \(unescaped: Self.recordColumns) FROM dcserve_dictionaries WHERE partition IS NOT DISTINCT FROM \(partition) AND hash = \(hash.hex)",
                logger: logger)
            var record: DictionaryMetadata?
            for try await row in rows { record = try Self.record(from: row) }
            guard let record else { return }
            state.withLock { state in
                var record = record
                if let old = state.index[key], old.lastServed > record.lastServed { record.lastServed = old.lastServed }
                state.set(key, record)
                state.corrupted.remove(key)
            }
            notify(.stored(hash, partition: partition))
        case "removed":
            let wasKnown: Bool = state.withLock { state in state.remove(key) != nil }
            if wasKnown { notify(.removed(hash, partition: partition)) }
        default:
            logger.warning("ignored unknown notification", metadata: ["payload": "\(payload.prefix(100))"])
        }
    }

    private func notify(_ change: Change) {
        for observer in observers.withLock({ $0 }) { observer(change) }
    }

    // MARK: Rows

    private static let recordColumns = """
        hash, match, path_pattern, match_dest, dictionary_id, rule, source_path, first_served, last_served, max_age, expires, byte_size, \
        partition
        """

    /// SQL for a notification payload of a row with columns `hash` and `partition` (see ``handle``).
    private static func notifyPayload(_ verb: String) -> String {
        "'\(verb) ' || hash || COALESCE(' ' || partition, '')"
    }

    private static func record(from row: PostgresRow, offset: Int = 0) throws -> DictionaryMetadata {
        let cells = Array(row.makeRandomAccess())
        func cell<T: PostgresDecodable>(_ i: Int, _ type: T.Type) throws -> T {
            try cells[offset + i].decode(T.self, context: .default)
        }
        return DictionaryMetadata(
            hash: try cell(0, String.self), match: try cell(1, String.self),
            pathPattern: try cell(2, String.self), matchDestinations: try cell(3, [String].self),
            id: try cell(4, String?.self), rule: try cell(5, String?.self), sourcePath: try cell(6, String?.self),
            firstServed: try cell(7, Date.self), lastServed: try cell(8, Date.self), maxAge: try cell(9, Int?.self),
            expires: try cell(10, Date?.self), byteSize: try cell(11, Int.self), partition: try cell(12, String?.self))
    }

    /// An error as text for logs: PSQLError's description hides the server's message, so add it.
    static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            var text = "\(error.code)"
            if let message = error.serverInfo?[.message] { text += ": \(message)" }
            if let underlying = error.underlying { text += " (\(underlying))" }
            return text
        }
        return "\(error)"
    }
}
