@testable import DictionaryStorePostgres
import DictionaryCodec
import DictionaryTransport
import Foundation
import PostgresNIO
import Testing
import TestSupport

/// Per-user partitions in the PostgreSQL store: persisted, returned, looked up by
/// (partition, hash) only, carried by notifications and the tiered store, migrated from schema 1,
/// and pruned by #13's retention rule across partitions. Against the real throwaway PostgreSQL.
@Suite(.serialized, .enabled(if: TestPostgres.url != nil, TestPostgres.skipReason))
struct PostgresPartitionTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let bytes1 = Array("alice's calendar: meeting 1, meeting 2, meeting 3".utf8) + [UInt8](repeating: 1, count: 300)
    let bytes2 = Array("bob's calendar: lunch 1, lunch 2, lunch 3".utf8) + [UInt8](repeating: 2, count: 300)
    let alice = String(repeating: "a1", count: 32)  // partition ids: 64 hex digits (HMACs)
    let bob = String(repeating: "b2", count: 32)

    func description(_ partition: String?, maxAge: Int? = 86_400) -> DictionaryDescription {
        DictionaryDescription(pattern: try! URLPattern("/api/calendar", base: nil), rule: "calendar",
                              sourcePath: "/api/calendar", maxAge: maxAge, partition: partition)
    }

    func open(_ settings: PostgresStoreSettings, retention: DictionaryRetention = DictionaryRetention()) async throws
        -> PostgresDictionaryStore {
        try await onThread { try PostgresDictionaryStore(settings: settings, retention: retention) }
    }

    @Test func aPartitionedDictionaryIsFoundOnlyByItsPartitionAndHash() async throws {
        let settings = try await TestPostgres.freshDatabase()
        let a = try await open(settings)
        let b = try await open(settings)
        defer { a.shutdown(); b.shutdown() }
        let (t0, bytes1, alice, bob) = (t0, bytes1, alice, bob)
        let hash = try await onThread { try a.put(bytes1, description: description(alice), now: t0) }
        #expect(try await TestPostgres.scalar(settings, "SELECT partition FROM dcserve_dictionaries") == alice)
        let own = try await onThread { a.get(hash, partition: alice) }
        #expect(own?.bytes == bytes1 && own?.metadata.partition == alice)
        // Never for another partition, nor for none (the shared namespace).
        #expect(try await onThread { a.get(hash, partition: bob) } == nil)
        #expect(try await onThread { a.get(hash) } == nil)
        #expect(a.metadata(hash) == nil && a.metadata(hash, partition: bob) == nil)
        #expect(!a.recordServed(hash, at: t0) && !a.recordServed(hash, partition: bob, at: t0))
        // Another instance learns it by notification, with its partition.
        #expect(await eventually { b.metadata(hash, partition: alice) != nil })
        #expect(b.metadata(hash) == nil)
        #expect(try await onThread { b.get(hash, partition: alice)?.bytes } == bytes1)
        #expect(try await onThread { b.get(hash, partition: bob) } == nil)
        // The same bytes stored by bob are bob's own row, with its own record.
        try await onThread { _ = try b.put(bytes1, description: description(bob), now: t0.addingTimeInterval(5)) }
        #expect(try await TestPostgres.scalar(settings, "SELECT count(*)::text FROM dcserve_dictionaries") == "2")
        #expect(await eventually { a.metadata(hash, partition: bob) != nil })
        #expect(a.metadata(hash, partition: alice)?.lastServed == t0 && a.metadata(hash, partition: bob)?.lastServed == t0.addingTimeInterval(5))
        #expect(Set(a.hashes) == [hash] && a.records.count == 2)
        // last_served is flushed per (partition, hash).
        #expect(a.recordServed(hash, partition: alice, at: t0.addingTimeInterval(60)))
        try await onThread { try a.flush() }
        let served = try await TestPostgres.scalar(settings, """
            SELECT string_agg(partition || '=' || (extract(epoch from last_served)::bigint - \(Int(t0.timeIntervalSince1970)))::text, ',' ORDER BY partition)
            FROM dcserve_dictionaries
            """)
        #expect(served == "\(alice)=60,\(bob)=5")
        // After a restart every partition's record is loaded again.
        let c = try await open(settings)
        defer { c.shutdown() }
        #expect(c.metadata(hash, partition: alice)?.partition == alice && c.metadata(hash, partition: bob)?.partition == bob)
        #expect(c.metadata(hash) == nil)
    }

    @Test func theSchemaRefusesAnythingButAPartitionID() async throws {
        let settings = try await TestPostgres.freshDatabase()
        let a = try await open(settings)
        defer { a.shutdown() }
        let (t0, bytes1) = (t0, bytes1)
        // A credential must never reach the database: only HMAC ids (or `anonymous`) are accepted.
        let refusal = try await onThread { () -> String in
            do { _ = try a.put(bytes1, description: description("Bearer alice"), now: t0); return "stored" } catch { return "\(error)" }
        }
        #expect(refusal.contains("dcserve_dictionaries_partition_id"), "\(refusal)")
        #expect(try await TestPostgres.scalar(settings, "SELECT count(*)::text FROM dcserve_dictionaries") == "0")
        _ = try await onThread { try a.put(bytes1, description: description("anonymous"), now: t0) }
        #expect(a.metadata(SHA256.hash(bytes1), partition: "anonymous") != nil)
    }

    @Test func schemaOneIsMigratedKeepingItsRows() async throws {
        let settings = try await TestPostgres.freshDatabase()
        // A database as the first release left it: schema 1 with one shared dictionary.
        try await TestPostgres.withConnection(settings) { c in
            try await c.query("CREATE TABLE dcserve_schema (singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton), version integer NOT NULL)",
                              logger: TestPostgres.logger)
            for statement in PostgresDictionarySchema.migrations[0] {
                try await c.query(PostgresQuery(unsafeSQL: statement), logger: TestPostgres.logger)
            }
            try await c.query("INSERT INTO dcserve_schema (version) VALUES (1)", logger: TestPostgres.logger)
        }
        let bytes = bytes2, hex = SHA256.hash(bytes2).hex
        try await TestPostgres.withConnection(settings) { c in
            try await c.query("""
                INSERT INTO dcserve_dictionaries (hash, bytes, byte_size, match, path_pattern, first_served, last_served)
                VALUES (\(hex), \(ByteBuffer(bytes: bytes)), \(bytes.count), '/api/calendar', '/api/calendar', now(), now())
                """, logger: TestPostgres.logger)
        }
        let a = try await open(settings)
        defer { a.shutdown() }
        #expect(try await TestPostgres.scalar(settings, "SELECT version::text FROM dcserve_schema")
            == "\(PostgresDictionarySchema.currentVersion)")
        #expect(try await TestPostgres.scalar(settings, "SELECT count(*)::text FROM dcserve_history_groups") == "0")
        #expect(try await onThread { a.get(SHA256.hash(bytes)) }?.bytes == bytes)
        #expect(try await TestPostgres.scalar(settings,
            "SELECT conname::text FROM pg_constraint WHERE conname = 'dcserve_dictionaries_partition_id'") == "dcserve_dictionaries_partition_id")
    }

    @Test func retentionAcrossPartitionsTakesExpiredThenLeastRecentlyServed() async throws {
        let settings = try await TestPostgres.freshDatabase()
        // Room for two of the four; the per-rule count cap (1) may remove expired ones only.
        let size = bytes1.count
        let a = try await open(settings, retention: DictionaryRetention(maxTotalBytes: 2 * size + 10, maxCountPerRule: 1))
        let b = try await open(settings)
        defer { a.shutdown(); b.shutdown() }
        let (t0, alice, bob) = (t0, alice, bob)
        @Sendable func body(_ n: Int) -> [UInt8] { Array("calendar version \(n) ".utf8) + [UInt8](repeating: UInt8(n), count: size - 19) }
        // alice v1 (served at t0, fresh for a day), bob v1 (t0 + 10), alice v2 (t0 + 20, expires at t0 + 25),
        // bob v2 (t0 + 30).
        let h1 = try await onThread { try a.put(body(1), description: description(alice), now: t0) }
        let h2 = try await onThread { try a.put(body(2), description: description(bob), now: t0.addingTimeInterval(10)) }
        let h3 = try await onThread { try a.put(body(3), description: description(alice, maxAge: 5), now: t0.addingTimeInterval(20)) }
        let h4 = try await onThread { try a.put(body(4), description: description(bob), now: t0.addingTimeInterval(30)) }
        #expect(await eventually { b.records.count == 4 })
        let removed = try await onThread { a.prune(now: t0.addingTimeInterval(40)) }
        // The cap (1 per rule) removes the only expired one (alice v2); the three fresh ones stay for it.
        // Then the budget removes the least recently served fresh one (alice v1), whatever its partition.
        #expect(removed == [DictionaryRemoval(hash: h3, reason: .ruleCount, partition: alice),
                            DictionaryRemoval(hash: h1, reason: .totalBytes, partition: alice)])
        #expect(Set(a.records.map(\.partition)) == [bob] && a.metadata(h2, partition: bob) != nil && a.metadata(h4, partition: bob) != nil)
        #expect(await eventually { b.records.count == 2 && b.metadata(h1, partition: alice) == nil })
        #expect(try await TestPostgres.scalar(settings, "SELECT count(*)::text FROM dcserve_dictionaries WHERE partition = '\(alice)'") == "0")
    }

    @Test func tieredStoreKeepsPartitionsApartWithOneLocalCopy() async throws {
        let settings = try await TestPostgres.freshDatabase()
        let a = try await open(settings)
        let b = try await open(settings)
        defer { a.shutdown(); b.shutdown() }
        let (t0, bytes1, alice, bob) = (t0, bytes1, alice, bob)
        let directory = uniqueTemporaryURL("tiered-partitions").path
        let local = try DirectoryDictionaryStore(directory: directory, retention: DictionaryRetention(maxTotalBytes: 1 << 20), cacheBudget: 0)
        let tiered = TieredDictionaryStore(local: local, shared: b)
        let removals = RemovalLog()
        tiered.onRemoval { hash, partition in removals.append(hash, partition) }
        let learnt = RemovalLog()
        tiered.onStored { record in learnt.append(SHA256.hash([]), record.partition) }
        let hash = try await onThread { try a.put(bytes1, description: description(alice), now: t0) }
        #expect(await eventually { tiered.metadata(hash, partition: alice) != nil })
        #expect(await eventually { learnt.entries.contains { $0.1 == alice } })
        #expect(try await onThread { tiered.get(hash, partition: alice)?.metadata.partition } == alice)
        #expect(try await onThread { tiered.get(hash, partition: bob) } == nil)
        #expect(try await onThread { tiered.get(hash) } == nil)
        // The local copy (written in the background) is bytes only: bob still gets nothing from it.
        #expect(await eventually { FileManager.default.fileExists(atPath: directory + "/" + hash.hex) })
        #expect(try await onThread { tiered.get(hash, partition: bob) } == nil)
        #expect(tiered.recordServed(hash, partition: alice, at: t0.addingTimeInterval(2)))
        #expect(!tiered.recordServed(hash, partition: bob, at: t0.addingTimeInterval(2)))
        // Removal of alice's row reaches the tiered store with its partition.
        _ = try await TestPostgres.scalar(settings, """
            WITH gone AS (DELETE FROM dcserve_dictionaries RETURNING hash, partition)
            SELECT pg_notify('dcserve_dictionaries', 'removed ' || hash || ' ' || partition) FROM gone
            """)
        #expect(await eventually { removals.entries.contains { $0.0 == hash && $0.1 == alice } })
        #expect(try await onThread { tiered.get(hash, partition: alice) } == nil)
    }
}

/// Thread-safe list of (hash, partition) pairs seen by an observer.
final class RemovalLog: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [(DictionaryHash, String?)] = []
    func append(_ hash: DictionaryHash, _ partition: String?) { lock.withLock { list.append((hash, partition)) } }
    var entries: [(DictionaryHash, String?)] { lock.withLock { list } }
}
