import DictionaryCodec
import DictionaryStoreSQLite
import DictionaryTransport
import Foundation
import Testing

/// A directory store left by an earlier dcserve (or `dcserve train --store`) in the SQLite store's
/// directory is imported at open: once, verified, idempotently.
@Suite struct DirectoryStoreImportTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let alice = String(repeating: "a1", count: 32)

    func description(_ partition: String?, match: String = "/api/calendar") -> DictionaryDescription {
        DictionaryDescription(pattern: try! URLPattern(match, base: nil), matchDestinations: ["document"], id: DictionaryID("x"),
                              rule: "calendar", sourcePath: match, maxAge: 3_600, partition: partition)
    }

    func names(_ directory: String) -> Set<String> {
        Set((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
    }

    @Test func anOldDirectoryStoreIsImportedOnceAndItsFilesRemoved() throws {
        let directory = temporaryStorePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let shared = Array("a static dictionary".utf8) + [UInt8](repeating: 1, count: 100)
        let mine = Array("alice's calendar".utf8) + [UInt8](repeating: 2, count: 100)
        let liar = Array("bytes that will not match".utf8)
        var liarHash: DictionaryHash
        do {
            let old = try DirectoryDictionaryStore(directory: directory)
            try old.put(shared, description: description(nil, match: "/static/*"), now: t0)
            try old.put(mine, description: description(alice), now: t0.addingTimeInterval(1))
            old.recordServed(SHA256.hash(mine), partition: alice, at: t0.addingTimeInterval(30))
            try old.flush()
            liarHash = try old.put(liar, description: description(nil, match: "/liar"), now: t0)
        }
        _ = FileManager.default.createFile(atPath: directory + "/" + liarHash.hex, contents: Data("tampered".utf8))
        let logs = CapturedLogs()
        var store = try SQLiteDictionaryStore(directory: directory, logger: logs.logger)
        for round in 0..<2 {  // imported, then reopened: the same content, nothing imported twice
            #expect(store.get(SHA256.hash(shared))?.bytes == shared)
            #expect(store.get(SHA256.hash(shared))?.metadata.match == "/static/*")
            let record = try #require(store.get(SHA256.hash(mine), partition: alice))
            #expect(record.bytes == mine && record.metadata.lastServed == t0.addingTimeInterval(30))
            #expect(record.metadata.firstServed == t0.addingTimeInterval(1) && record.metadata.matchDestinations == ["document"])
            #expect(store.get(SHA256.hash(mine)) == nil)
            #expect(store.get(liarHash) == nil)
            #expect(store.records.count == 2)
            // Only the SQLite files, the marker and the quarantined liar remain.
            #expect(!names(directory).contains { $0.hasSuffix(".json") || $0.count == 64 }, "\(names(directory)) round \(round)")
            try store.close()
            store = try SQLiteDictionaryStore(directory: directory)
        }
        #expect(logs.contains(.notice, "imported"))
        #expect(logs.contains(.error, "quarantined"))
    }

    @Test func anInterruptedImportIsRepeatedWithoutDuplicatesAndKeepsNewerRecords() throws {
        let directory = temporaryStorePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = Array("calendar v1".utf8) + [UInt8](repeating: 3, count: 100)
        let hash = try DirectoryDictionaryStore(directory: directory).put(bytes, description: description(alice), now: t0)
        let recordName = DirectoryDictionaryStore.recordName(hash, partition: alice)
        let record = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + recordName))
        do {
            let store = try SQLiteDictionaryStore(directory: directory)
            // Served since the import: newer than the directory's record.
            #expect(store.recordServed(hash, partition: alice, at: t0.addingTimeInterval(100)))
            try store.flush()
            try store.close()
        }
        // As if the process died after the import's commit, before its files were removed.
        try Data(bytes).write(to: URL(fileURLWithPath: directory + "/" + hash.hex))
        try record.write(to: URL(fileURLWithPath: directory + "/" + recordName))
        let store = try SQLiteDictionaryStore(directory: directory)
        #expect(store.records.count == 1 && store.totalByteCount == bytes.count)
        #expect(store.metadata(hash, partition: alice)?.lastServed == t0.addingTimeInterval(100))
        #expect(!names(directory).contains(recordName) && !names(directory).contains(hash.hex))
    }
}
