import DictionaryCodec
import DictionaryStoreSQLite
import DictionaryTransport
import Foundation
import GRDB
import Testing

/// The SQLite store against a real database file: what it stores, what it refuses, corruption,
/// retention, restarts and concurrent use.
@Suite struct SQLiteDictionaryStoreTests {
    let directory = temporaryStorePath()
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let dictionary = Array("This is a test dictionary.\n".utf8)

    func description(_ match: String = "/static/app.*.js", rule: String? = "app", maxAge: Int? = 86_400,
                     partition: String? = nil) -> DictionaryDescription {
        DictionaryDescription(pattern: try! URLPattern(match, base: nil), matchDestinations: ["script", ""], id: DictionaryID("v1"),
                              rule: rule, sourcePath: "/static/app.v1.js", maxAge: maxAge, partition: partition)
    }

    func cleanup() { try? FileManager.default.removeItem(atPath: directory) }

    /// Runs SQL on the store's file through a connection of the test's own.
    func sql(_ statement: String, _ arguments: StatementArguments = []) throws {
        let queue = try DatabaseQueue(path: directory + "/" + SQLiteDictionaryStore.fileName)
        try queue.write { db in try db.execute(sql: statement, arguments: arguments) }
        try queue.close()
    }

    @Test func putStoresBytesAndRecordAndGetVerifiesThem() throws {
        defer { cleanup() }
        let store = try SQLiteDictionaryStore(directory: directory)
        let hash = try store.put(dictionary, description: description(), now: t0)
        #expect(hash == SHA256.hash(dictionary))
        let loaded = try #require(store.get(hash))
        #expect(loaded.bytes == dictionary)
        #expect(loaded.metadata.match == "/static/app.*.js" && loaded.metadata.matchDestinations == ["script", ""])
        #expect(loaded.metadata.id == "v1" && loaded.metadata.rule == "app" && loaded.metadata.sourcePath == "/static/app.v1.js")
        #expect(loaded.metadata.firstServed == t0 && loaded.metadata.lastServed == t0)
        #expect(loaded.metadata.expires == t0.addingTimeInterval(86_400) && loaded.metadata.byteSize == dictionary.count)
        #expect(loaded.covers(path: "/static/app.v2.js") && !loaded.covers(path: "/other.js"))
        #expect(store.candidate(for: hash)?.matchDestinations == ["script", ""])
        #expect(store.get(SHA256.hash(Array("never stored".utf8))) == nil)
        #expect(store.hashes == [hash] && store.records.count == 1 && store.totalByteCount == dictionary.count)
        // Private from the start: the directory 0700, the database and its WAL files 0600.
        #expect(mode(directory) == 0o700)
        for suffix in ["", "-wal", "-shm"] {
            let path = store.path + suffix
            #expect(mode(path) == nil || mode(path) == 0o600, "\(path)")
        }
        #expect(mode(store.path + "-wal") == 0o600)
        // Idempotent: the same bytes again are one blob, the record refreshed.
        try store.put(dictionary, description: description(maxAge: 60), now: t0.addingTimeInterval(5))
        #expect(store.totalByteCount == dictionary.count && store.records.count == 1)
        #expect(store.metadata(hash)?.lastServed == t0.addingTimeInterval(5))
        #expect(store.metadata(hash)?.firstServed == t0)
        #expect(store.metadata(hash)?.expires == t0.addingTimeInterval(65))
    }

    @Test func tooLargeDictionaryIsRefusedWithAClearError() throws {
        defer { cleanup() }
        let store = try SQLiteDictionaryStore(directory: directory, maxDictionaryBytes: 10)
        #expect(throws: DictionaryStoreError.self) { try store.put(dictionary, description: description(), now: t0) }
        #expect(store.hashes.isEmpty)
    }

    @Test func corruptedBytesAreQuarantinedAndNeverReturned() throws {
        defer { cleanup() }
        let hash: DictionaryHash
        do {
            let writer = try SQLiteDictionaryStore(directory: directory)
            hash = try writer.put(dictionary, description: description(), now: t0)
            try writer.close()
        }
        var bytes = dictionary
        bytes[0] ^= 0xFF
        try sql("UPDATE blobs SET bytes = ?", [Data(bytes)])
        let logs = CapturedLogs()
        let store = try SQLiteDictionaryStore(directory: directory, logger: logs.logger)
        #expect(store.get(hash) == nil)
        #expect(store.get(hash) == nil)
        #expect(store.hashes.isEmpty && store.records.isEmpty && store.totalByteCount == 0)
        #expect(logs.contains(.error, "quarantined"))
        let queue = try DatabaseQueue(path: store.path)
        let quarantined = try queue.read { db in try Row.fetchAll(db, sql: "SELECT hash, bytes FROM quarantine") }
        #expect(quarantined.count == 1)
        #expect((quarantined.first?[1] as Data?) == Data(bytes))
        // Stored anew, it is usable again.
        try store.put(dictionary, description: description(), now: t0)
        #expect(store.get(hash)?.bytes == dictionary)
    }

    @Test func aCorruptDatabaseFileIsQuarantinedAtOpen() throws {
        defer { cleanup() }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try garbage.write(to: URL(fileURLWithPath: directory + "/" + SQLiteDictionaryStore.fileName))
        let logs = CapturedLogs()
        let store = try SQLiteDictionaryStore(directory: directory, logger: logs.logger)
        #expect(store.hashes.isEmpty)
        let hash = try store.put(dictionary, description: description(), now: t0)
        #expect(store.get(hash)?.bytes == dictionary)
        let quarantined = try FileManager.default.contentsOfDirectory(atPath: directory + "/quarantine")
        #expect(quarantined.contains { $0.hasPrefix(SQLiteDictionaryStore.fileName + ".") })
        #expect(logs.contains(.error, "corrupt"))
    }

    @Test func aSymlinkInPlaceOfTheDatabaseIsRefused() throws {
        defer { cleanup() }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let elsewhere = directory + "/elsewhere"
        _ = FileManager.default.createFile(atPath: elsewhere, contents: Data())
        try FileManager.default.createSymbolicLink(atPath: directory + "/" + SQLiteDictionaryStore.fileName, withDestinationPath: elsewhere)
        #expect(throws: DictionaryStoreError.self) { try SQLiteDictionaryStore(directory: directory) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: elsewhere)).isEmpty)
    }

    @Test func aNewerSchemaIsRefusedNamingBothVersions() throws {
        defer { cleanup() }
        try SQLiteDictionaryStore(directory: directory).close()
        try sql("UPDATE dcserve_schema SET version = 99")
        let error = #expect(throws: DictionaryStoreError.self) { try SQLiteDictionaryStore(directory: directory) }
        #expect(error?.message.contains("99") == true)
    }

    @Test func restartKeepsEveryCommittedVersionAndFlushedRecency() throws {
        defer { cleanup() }
        let payloads = (0..<50).map { i in Array("version \(i) ".utf8) + [UInt8](repeating: UInt8(i), count: 200) }
        var hashes: [DictionaryHash] = []
        do {
            let store = try SQLiteDictionaryStore(directory: directory)
            let writes = payloads.map { DictionaryStoreWrite(bytes: $0, hash: SHA256.hash($0), description: description(), now: t0) }
            try store.put(batch: writes)
            hashes = writes.map(\.hash)
            #expect(store.recordServed(hashes[1], at: t0.addingTimeInterval(500)))
            #expect(store.metadata(hashes[1])?.lastServed == t0.addingTimeInterval(500))
            try store.flush()
            #expect(store.recordServed(hashes[2], at: t0.addingTimeInterval(600)))  // not flushed: lost
            try store.close()
        }
        let reopened = try SQLiteDictionaryStore(directory: directory)
        #expect(Set(reopened.hashes) == Set(hashes))
        for (hash, payload) in zip(hashes, payloads) { #expect(reopened.get(hash)?.bytes == payload) }
        #expect(reopened.metadata(hashes[1])?.lastServed == t0.addingTimeInterval(500))
        #expect(reopened.metadata(hashes[2])?.lastServed == t0)
        #expect(reopened.totalByteCount == payloads.reduce(0) { $0 + $1.count })
    }

    @Test func recordServedMovesTheRecordInWholeSecondsAndKnowsOnlyStoredHashes() throws {
        defer { cleanup() }
        let store = try SQLiteDictionaryStore(directory: directory)
        let hash = try store.put(Array("recency".utf8), description: description(maxAge: 10), now: t0)
        #expect(store.recordServed(hash, at: t0.addingTimeInterval(0.5)))
        #expect(store.metadata(hash)?.lastServed == t0 && store.metadata(hash)?.expires == t0.addingTimeInterval(10))
        #expect(store.recordServed(hash, at: t0.addingTimeInterval(2)))
        #expect(store.metadata(hash)?.lastServed == t0.addingTimeInterval(2))
        #expect(store.metadata(hash)?.expires == t0.addingTimeInterval(12))
        #expect(store.recordServed(hash, at: t0))  // never backwards
        #expect(store.metadata(hash)?.lastServed == t0.addingTimeInterval(2))
        #expect(!store.recordServed(SHA256.hash(Array("never stored".utf8)), at: t0))
        try store.flush()
        #expect(store.metadata(hash)?.lastServed == t0.addingTimeInterval(2))
        #expect(store.metadata(hash)?.expires == t0.addingTimeInterval(12))
    }

    @Test func recordServedForgetsWhatRetentionOrQuarantineRemoved() throws {
        defer { cleanup() }
        // Written pairs are remembered (recordServed answers without a read): removals must forget them.
        let store = try SQLiteDictionaryStore(directory: directory, retention: DictionaryRetention(maxTotalBytes: 150))
        let first = try store.put([UInt8](repeating: 1, count: 100), description: description(), now: t0)
        #expect(store.recordServed(first, at: t0))
        let second = try store.put([UInt8](repeating: 2, count: 100), description: description(), now: t0.addingTimeInterval(1))
        #expect(store.hashes == [second])
        #expect(!store.recordServed(first, at: t0.addingTimeInterval(5)))
        // Bytes that no longer match their hash: quarantined on load, then unknown.
        try sql("UPDATE blobs SET bytes = zeroblob(100)")
        #expect(store.get(second) == nil)
        #expect(!store.recordServed(second, at: t0.addingTimeInterval(5)))
        // A batch's versions are known at once, each by its own partition.
        let bytes = [UInt8](repeating: 3, count: 100), hash = SHA256.hash(bytes)
        try store.put(batch: [DictionaryStoreWrite(bytes: bytes, hash: hash, description: description(partition: "u1"), now: t0)])
        #expect(store.recordServed(hash, partition: "u1", at: t0.addingTimeInterval(10)))
        #expect(!store.recordServed(hash, partition: "u2", at: t0.addingTimeInterval(10)))
        #expect(!store.recordServed(hash, at: t0.addingTimeInterval(10)))
        try store.flush()
        #expect(store.metadata(hash, partition: "u1")?.lastServed == t0.addingTimeInterval(10))
    }

    @Test func aNewDatabaseGetsTheDefaultPageSizeAnExistingOneKeepsItsOwn() throws {
        defer { cleanup() }
        func pageSize() throws -> Int? {
            try DatabaseQueue(path: directory + "/" + SQLiteDictionaryStore.fileName).read { db in try Int.fetchOne(db, sql: "PRAGMA page_size") }
        }
        var store: SQLiteDictionaryStore? = try SQLiteDictionaryStore(directory: directory, pageSize: 4096)
        let hash = try store?.put(dictionary, description: description(), now: t0)
        try store?.close()
        store = nil
        #expect(try pageSize() == 4096)
        let reopened = try SQLiteDictionaryStore(directory: directory)
        #expect(reopened.get(try #require(hash))?.bytes == dictionary)
        #expect(try pageSize() == 4096)
        try reopened.close()
        cleanup()
        let fresh = try SQLiteDictionaryStore(directory: directory)
        try fresh.close()
        #expect(try pageSize() == SQLiteDictionaryStore.defaultPageSize)
    }

    @Test func retentionByTotalBytesRemovesTheLeastRecentlyServed() throws {
        defer { cleanup() }
        let store = try SQLiteDictionaryStore(directory: directory, retention: DictionaryRetention(maxTotalBytes: 250))
        var hashes: [DictionaryHash] = []
        for i in 0..<2 {
            hashes.append(try store.put([UInt8](repeating: UInt8(i), count: 100), description: description(), now: t0.addingTimeInterval(Double(i))))
        }
        store.recordServed(hashes[0], at: t0.addingTimeInterval(10))  // now the most recent
        // The write that passes the budget evicts at once (the unflushed recency counts).
        hashes.append(try store.put([UInt8](repeating: 2, count: 100), description: description(), now: t0.addingTimeInterval(11)))
        #expect(Set(store.hashes) == [hashes[0], hashes[2]])
        #expect(store.totalByteCount == 200)
        #expect(store.prune(now: t0.addingTimeInterval(20)) == [DictionaryRemoval(hash: hashes[1], reason: .totalBytes)])
        #expect(store.prune(now: t0.addingTimeInterval(20)).isEmpty)
    }

    @Test func aBatchOverTheBudgetKeepsTheStoreWithinIt() throws {
        defer { cleanup() }
        let store = try SQLiteDictionaryStore(directory: directory, retention: DictionaryRetention(maxTotalBytes: 10_000))
        for round in 0..<20 {
            let writes = (0..<10).map { i -> DictionaryStoreWrite in
                let bytes = Array("round \(round) version \(i)".utf8) + [UInt8](repeating: UInt8(i), count: 1_000)
                return DictionaryStoreWrite(bytes: bytes, hash: SHA256.hash(bytes), description: description(),
                                            now: t0.addingTimeInterval(Double(round * 10 + i)))
            }
            try store.put(batch: writes)
            #expect(store.totalByteCount <= 10_000)
        }
        let size = try DatabaseQueue(path: store.path).read { db in try Int.fetchOne(db, sql: "SELECT sum(size) FROM blobs") }
        #expect(size == store.totalByteCount)
        #expect(store.prune(now: t0.addingTimeInterval(1_000)).count == 20 * 10 - store.records.count)
    }

    @Test func retentionByCountPerRule() throws {
        defer { cleanup() }
        let store = try SQLiteDictionaryStore(directory: directory, retention: DictionaryRetention(maxCountPerRule: 2))
        var a: [DictionaryHash] = []
        for i in 0..<3 {
            a.append(try store.put(Array("a\(i)".utf8), description: description(rule: "a", maxAge: 5), now: t0.addingTimeInterval(Double(i))))
        }
        let b = try store.put(Array("b".utf8), description: description(rule: "b", maxAge: 5), now: t0)
        #expect(store.prune(now: t0.addingTimeInterval(4)).isEmpty)
        #expect(store.prune(now: t0.addingTimeInterval(10)) == [DictionaryRemoval(hash: a[0], reason: .ruleCount)])
        #expect(Set(store.hashes) == [a[1], a[2], b])
    }

    @Test func retentionByAgePastExpiry() throws {
        defer { cleanup() }
        let store = try SQLiteDictionaryStore(directory: directory, retention: DictionaryRetention(keepPastExpiry: 60))
        let old = try store.put(Array("old".utf8), description: description(maxAge: 10), now: t0)
        let served = try store.put(Array("served".utf8), description: description(maxAge: 10), now: t0)
        let forever = try store.put(Array("no max-age".utf8), description: description(maxAge: nil), now: t0)
        store.recordServed(served, at: t0.addingTimeInterval(50))  // expiry moves to t0+60
        #expect(store.prune(now: t0.addingTimeInterval(69)).isEmpty)
        #expect(store.prune(now: t0.addingTimeInterval(71)) == [DictionaryRemoval(hash: old, reason: .expired)])
        #expect(Set(store.hashes) == [served, forever])
        #expect(store.prune(now: t0.addingTimeInterval(1_000)) == [DictionaryRemoval(hash: served, reason: .expired)])
    }

    @Test func concurrentReadersDuringBatchedWrites() async throws {
        defer { cleanup() }
        let store = try SQLiteDictionaryStore(directory: directory)
        let payloads = (0..<200).map { i in Array("payload \(i) ".utf8) + [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: 500 + i) }
        let first = payloads.prefix(20).map { DictionaryStoreWrite(bytes: $0, hash: SHA256.hash($0), description: description(), now: t0) }
        try store.put(batch: Array(first))
        let shared = description(), start = t0
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for batch in stride(from: 20, to: payloads.count, by: 20) {
                    let writes = payloads[batch..<batch + 20].map {
                        DictionaryStoreWrite(bytes: $0, hash: SHA256.hash($0), description: shared, now: start)
                    }
                    try! store.put(batch: writes)
                }
            }
            for reader in 0..<8 {
                group.addTask {
                    for round in 0..<100 {
                        let payload = payloads[(reader * 13 + round) % 20]
                        #expect(store.get(SHA256.hash(payload))?.bytes == payload)
                        #expect(store.recordServed(SHA256.hash(payload), at: start.addingTimeInterval(Double(round))))
                    }
                }
            }
        }
        try store.flush()
        #expect(Set(store.hashes) == Set(payloads.map { SHA256.hash($0) }))
        for payload in payloads { #expect(store.get(SHA256.hash(payload))?.bytes == payload) }
    }
}
