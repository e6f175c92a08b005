@testable import DictionaryStorePostgres
import DictionaryCodec
import DictionaryTransport
import Foundation
import Logging
import PostgresNIO
import Testing
import TestSupport

/// The real throwaway PostgreSQL of `make unit-test` (scripts/throwaway-postgres.sh); every test
/// gets its own database.
enum TestPostgres {
    static let url = ProcessInfo.processInfo.environment["DCSERVE_TEST_PG_URL"]
    static let skipReason: Comment = """
        DCSERVE_TEST_PG_URL is not set: PostgreSQL store tests skipped (make unit-test sets it; by hand: \
        export DCSERVE_TEST_PG_URL=$(scripts/throwaway-postgres.sh start))
        """

    static func freshDatabase() async throws -> PostgresStoreSettings {
        var settings = try PostgresStoreSettings(url: url!)
        let name = "u_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        try await withConnection(settings) { try await $0.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger) }
        settings.database = name
        return settings
    }

    static func withConnection<T: Sendable>(_ settings: PostgresStoreSettings,
                                            _ body: (PostgresConnection) async throws -> T) async throws -> T {
        let connection = try await PostgresConnection.connect(
            configuration: .init(host: settings.host, port: settings.port, username: settings.username, password: settings.password,
                                 database: settings.database, tls: .disable),
            id: 1, logger: logger)
        do {
            let result = try await body(connection)
            try await connection.close()
            return result
        } catch {
            try? await connection.close()
            throw error
        }
    }

    static func scalar(_ settings: PostgresStoreSettings, _ sql: String) async throws -> String? {
        try await withConnection(settings) { connection in
            var value: String?
            for try await v in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger).decode(String?.self) { value = v }
            return value
        }
    }

    static let logger = Logger(label: "test.postgres")
}

/// Runs the store's blocking calls on their own thread (never on the Swift concurrency pool).
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

/// Waits (bounded: 200 × 25 ms) until `condition` holds; returns whether it did.
func eventually(_ condition: @escaping @Sendable () -> Bool) async -> Bool {
    for _ in 0..<200 {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(25))
    }
    return condition()
}

@Suite(.serialized, .enabled(if: TestPostgres.url != nil, TestPostgres.skipReason))
struct PostgresDictionaryStoreTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let bytes1 = Array("dictionary one: function render() { return template; }".utf8) + [UInt8](repeating: 7, count: 300)
    let bytes2 = Array("dictionary two: function update() { return template; }".utf8) + [UInt8](repeating: 9, count: 300)

    func description(rule: String? = "app", maxAge: Int? = 86_400) -> DictionaryDescription {
        DictionaryDescription(pattern: try! URLPattern("/static/app.*.js", base: nil), matchDestinations: ["script"],
                              id: DictionaryID("v1"), rule: rule, sourcePath: "/static/app.v1.js", maxAge: maxAge)
    }

    func open(_ settings: PostgresStoreSettings, retention: DictionaryRetention = DictionaryRetention()) async throws
        -> PostgresDictionaryStore {
        try await onThread { try PostgresDictionaryStore(settings: settings, retention: retention) }
    }

    @Test func storesVerifiesAndAnotherInstanceLearnsByNotification() async throws {
        let settings = try await TestPostgres.freshDatabase()
        let a = try await open(settings)
        let b = try await open(settings)
        defer { a.shutdown(); b.shutdown() }
        let (t0, bytes1, d) = (t0, bytes1, description())
        let hash = try await onThread { try a.put(bytes1, description: d, now: t0) }
        #expect(hash == SHA256.hash(bytes1))
        let stored = try await onThread { a.get(hash) }
        #expect(stored?.bytes == bytes1)
        #expect(stored?.metadata.match == "/static/app.*.js" && stored?.metadata.matchDestinations == ["script"])
        #expect(stored?.metadata.rule == "app" && stored?.metadata.id == "v1" && stored?.metadata.byteSize == bytes1.count)
        #expect(stored?.metadata.expires == t0.addingTimeInterval(86_400))
        // B learnt of it by notification, and reads the same verified bytes.
        #expect(await eventually { b.metadata(hash) != nil })
        #expect(try await onThread { b.get(hash)?.bytes } == bytes1)
        // Storing again keeps one row and refreshes the record.
        try await onThread { _ = try a.put(bytes1, description: d, now: t0.addingTimeInterval(100)) }
        #expect(try await TestPostgres.scalar(settings, "SELECT count(*)::text FROM dcserve_dictionaries") == "1")
        #expect(a.metadata(hash)?.lastServed == t0.addingTimeInterval(100) && a.metadata(hash)?.firstServed == t0)
        // A hash nobody stored: nil, without a query.
        #expect(try await onThread { a.get(SHA256.hash([1, 2, 3])) } == nil)
    }

    @Test func aCorruptedRowIsNeverReturnedUntilStoredAgain() async throws {
        let settings = try await TestPostgres.freshDatabase()
        let a = try await open(settings)
        defer { a.shutdown() }
        let (t0, bytes1, d) = (t0, bytes1, description())
        let hash = try await onThread { try a.put(bytes1, description: d, now: t0) }
        _ = try await TestPostgres.scalar(settings, "UPDATE dcserve_dictionaries SET bytes = overlay(bytes placing '\\x00'::bytea from 5) RETURNING 'x'")
        let fresh = try await open(settings)
        defer { fresh.shutdown() }
        #expect(try await onThread { fresh.get(hash) } == nil)
        #expect(fresh.isCorrupted(hash) && fresh.metadata(hash) == nil)
        // Storing the right bytes again repairs the row; everyone learns it.
        try await onThread { _ = try a.put(bytes1, description: d, now: t0.addingTimeInterval(1)) }
        #expect(await eventually { !fresh.isCorrupted(hash) })
        #expect(try await onThread { fresh.get(hash)?.bytes } == bytes1)
    }

    @Test func lastServedIsWrittenOnlyByFlushInOneStatement() async throws {
        let settings = try await TestPostgres.freshDatabase()
        let a = try await open(settings)
        defer { a.shutdown() }
        let (t0, bytes1, bytes2, d) = (t0, bytes1, bytes2, description())
        let h1 = try await onThread { try a.put(bytes1, description: d, now: t0) }
        let h2 = try await onThread { try a.put(bytes2, description: d, now: t0) }
        #expect(a.recordServed(h1, at: t0.addingTimeInterval(50)) && a.recordServed(h2, at: t0.addingTimeInterval(60)))
        #expect(a.recordServed(h1, at: t0.addingTimeInterval(50.5)))  // < 1 s later: no change
        let sql = "SELECT string_agg(extract(epoch from last_served)::bigint::text, ',' ORDER BY hash) FROM dcserve_dictionaries"
        let before = try await TestPostgres.scalar(settings, sql)
        #expect(before == "\(Int(t0.timeIntervalSince1970)),\(Int(t0.timeIntervalSince1970))")
        try await onThread { try a.flush() }
        let expected = [(h1, 50), (h2, 60)].sorted { $0.0.hex < $1.0.hex }.map { "\(Int(t0.timeIntervalSince1970) + $0.1)" }
        #expect(try await TestPostgres.scalar(settings, sql) == expected.joined(separator: ","))
        #expect(!a.recordServed(SHA256.hash([9]), at: t0))
    }

    @Test func retentionRunsOnOneInstanceAtATimeAndIsSeenByAll() async throws {
        let settings = try await TestPostgres.freshDatabase()
        // The count cap bounds only expired dictionaries: both are past `expires` at t0 + 20.
        let retention = DictionaryRetention(maxCountPerRule: 1)
        let a = try await open(settings, retention: retention)
        let b = try await open(settings, retention: retention)
        defer { a.shutdown(); b.shutdown() }
        let (t0, bytes1, bytes2, d) = (t0, bytes1, bytes2, description(maxAge: 5))
        let h1 = try await onThread { try a.put(bytes1, description: d, now: t0) }
        let h2 = try await onThread { try a.put(bytes2, description: d, now: t0.addingTimeInterval(10)) }
        #expect(await eventually { b.metadata(h1) != nil && b.metadata(h2) != nil })
        // Another session holds the retention lock: neither instance prunes.
        try await TestPostgres.withConnection(settings) { holder in
            try await holder.query("SELECT pg_advisory_lock(\(PostgresDictionarySchema.retentionLock))", logger: TestPostgres.logger)
            #expect(try await onThread { a.prune(now: t0.addingTimeInterval(20)) }.isEmpty)
            #expect(try await onThread { b.prune(now: t0.addingTimeInterval(20)) }.isEmpty)
            try await holder.query("SELECT pg_advisory_unlock(\(PostgresDictionarySchema.retentionLock))", logger: TestPostgres.logger)
        }
        let removed = try await onThread { a.prune(now: t0.addingTimeInterval(20)) }
        #expect(removed == [DictionaryRemoval(hash: h1, reason: .ruleCount)])
        #expect(a.metadata(h1) == nil)
        #expect(await eventually { b.metadata(h1) == nil })
        #expect(try await onThread { b.prune(now: t0.addingTimeInterval(20)) }.isEmpty)
        #expect(Set(b.hashes) == [h2])
    }

    @Test func migratesOnceAndRefusesANewerSchema() async throws {
        let settings = try await TestPostgres.freshDatabase()
        let a = try await open(settings)
        a.shutdown()
        let again = try await open(settings)  // already current: nothing to do
        again.shutdown()
        #expect(try await TestPostgres.scalar(settings, "SELECT version::text FROM dcserve_schema") == "\(PostgresDictionarySchema.currentVersion)")
        _ = try await TestPostgres.scalar(settings, "UPDATE dcserve_schema SET version = 99 RETURNING 'x'")
        await #expect {
            _ = try await open(settings)
        } throws: { error in
            "\(error)".contains("newer than this dcserve knows") && !"\(error)".contains("dcserve-test")
        }
    }

    @Test func unreachableServerIsAClearErrorWithoutThePassword() async throws {
        var unreachable = try PostgresStoreSettings(url: "postgres://dcserve:sekrit@127.0.0.1:1/nothing?sslmode=disable")
        unreachable.connectTimeoutSeconds = 1
        let settings = unreachable
        await #expect {
            _ = try await onThread { try PostgresDictionaryStore(settings: settings) }
        } throws: { error in
            "\(error)".contains("cannot open the PostgreSQL dictionary store at postgres://dcserve:***@127.0.0.1:1/nothing")
                && !"\(error)".contains("sekrit")
        }
    }

    @Test func tieredStoreReadsPostgresOnceAndVerifiesBothTiers() async throws {
        let settings = try await TestPostgres.freshDatabase()
        let a = try await open(settings)
        let b = try await open(settings)
        defer { a.shutdown(); b.shutdown() }
        let (t0, bytes1, d) = (t0, bytes1, description())
        let hash = try await onThread { try a.put(bytes1, description: d, now: t0) }
        #expect(await eventually { b.metadata(hash) != nil })
        let directory = uniqueTemporaryURL("tiered").path
        let local = try DirectoryDictionaryStore(directory: directory, retention: DictionaryRetention(maxTotalBytes: 1 << 20), cacheBudget: 0)
        let tiered = TieredDictionaryStore(local: local, shared: b)
        #expect(try await onThread { tiered.get(hash)?.bytes } == bytes1)
        #expect(await eventually { FileManager.default.fileExists(atPath: directory + "/" + hash.hex) })  // cached locally
        // Corrupt the local copy: detected by its hash, quarantined, read again from PostgreSQL.
        try Data([UInt8](repeating: 0, count: bytes1.count)).write(to: URL(fileURLWithPath: directory + "/" + hash.hex))
        #expect(try await onThread { tiered.get(hash)?.bytes } == bytes1)
        #expect(FileManager.default.fileExists(atPath: directory + "/quarantine"))
        // Only what the shared tier knows is returned: a hash only in the local cache is not.
        let orphan = try local.put(bytes2, description: d, now: t0)
        #expect(try await onThread { tiered.get(orphan) } == nil)
    }

    @Test func tieredRecordServedTouchesTheSharedTierAndTheCacheLearnsItOnFlush() async throws {
        let settings = try await TestPostgres.freshDatabase()
        let a = try await open(settings)
        defer { a.shutdown() }
        let directory = uniqueTemporaryURL("tiered-recency").path
        let local = try DirectoryDictionaryStore(directory: directory, retention: DictionaryRetention(maxTotalBytes: 1 << 20), cacheBudget: 0)
        let tiered = TieredDictionaryStore(local: local, shared: a)
        let (t0, bytes1, d) = (t0, bytes1, description())
        let hash = try await onThread { try tiered.put(bytes1, description: d, now: t0) }
        #expect(local.metadata(hash)?.lastServed == t0)
        #expect(tiered.recordServed(hash, at: t0.addingTimeInterval(30)))
        #expect(!tiered.recordServed(SHA256.hash([4, 5, 6]), at: t0))  // unknown to the shared tier
        #expect(a.metadata(hash)?.lastServed == t0.addingTimeInterval(30))
        #expect(a.metadata(hash)?.expires == t0.addingTimeInterval(30 + 86_400))
        #expect(local.metadata(hash)?.lastServed == t0)  // the request path took one lock, the shared tier's
        try await onThread { try tiered.flush() }
        #expect(local.metadata(hash)?.lastServed == t0.addingTimeInterval(30))
        #expect(local.metadata(hash)?.expires == t0.addingTimeInterval(30 + 86_400))
        #expect(try await TestPostgres.scalar(settings, "SELECT extract(epoch FROM last_served)::bigint::text FROM dcserve_dictionaries")
                == String(Int(t0.timeIntervalSince1970) + 30))
        // The local record on disk carries it too (what a restarted instance's cache budget sees).
        let reopened = try DirectoryDictionaryStore(directory: directory, retention: DictionaryRetention(maxTotalBytes: 1 << 20), cacheBudget: 0)
        #expect(reopened.metadata(hash)?.lastServed == t0.addingTimeInterval(30))
    }
}
