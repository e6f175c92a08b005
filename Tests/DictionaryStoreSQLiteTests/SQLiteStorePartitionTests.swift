import DictionaryCodec
import DictionaryStoreSQLite
import DictionaryTransport
import Foundation
import Testing

/// The SQLite store answers by (partition, hash): a partitioned dictionary is never returned for
/// another partition or for none, before or after a restart; identical bytes are stored once.
@Suite struct SQLiteStorePartitionTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let alice = String(repeating: "a1", count: 32)
    let bob = String(repeating: "b2", count: 32)

    func description(_ partition: String?, id: String? = nil) -> DictionaryDescription {
        DictionaryDescription(pattern: try! URLPattern("/api/calendar", base: nil), id: id.map { DictionaryID($0)! }, rule: "calendar",
                              sourcePath: "/api/calendar", maxAge: 86_400, partition: partition)
    }

    /// `remove` (live versions the index dropped): the pair's record goes, and the bytes with the last
    /// record holding them; other partitions' records of the same bytes stay; unknown pairs are skipped.
    @Test func removeTakesOnlyTheNamedRecordsAndBytesNoRecordUses() throws {
        let directory = temporaryStorePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let same = Array("the same feed".utf8) + [UInt8](repeating: 5, count: 300)
        let own = Array("alice's own".utf8) + [UInt8](repeating: 6, count: 300)
        let store = try SQLiteDictionaryStore(directory: directory, retention: DictionaryRetention(maxTotalBytes: 1 << 20))
        let sameHash = try store.put(same, description: description(alice), now: t0)
        try store.put(same, description: description(bob), now: t0)
        let ownHash = try store.put(own, description: description(alice), now: t0)
        #expect(store.remove([(hash: sameHash, partition: alice), (hash: ownHash, partition: alice), (hash: ownHash, partition: bob)]) == 2)
        #expect(store.get(sameHash, partition: alice) == nil && store.get(ownHash, partition: alice) == nil)
        #expect(store.get(sameHash, partition: bob)?.bytes == same)
        #expect(Set(store.hashes) == [sameHash], "own's bytes went with their last record")
        #expect(store.remove([]) == 0)
    }

    @Test func aPartitionedDictionaryIsFoundOnlyByItsPartition() throws {
        let directory = temporaryStorePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = Array("alice's calendar".utf8) + [UInt8](repeating: 3, count: 200)
        let shared = Array("a shared dictionary".utf8) + [UInt8](repeating: 4, count: 200)
        var store = try SQLiteDictionaryStore(directory: directory)
        let hash = try store.put(bytes, description: description(alice), now: t0)
        let sharedHash = try store.put(shared, description: description(nil), now: t0)
        for _ in 0..<2 {
            #expect(store.get(hash, partition: alice)?.bytes == bytes)
            #expect(store.get(hash, partition: alice)?.metadata.partition == alice)
            #expect(store.get(hash, partition: bob) == nil && store.get(hash) == nil)
            #expect(store.metadata(hash) == nil && store.metadata(hash, partition: bob) == nil)
            #expect(store.metadata(hash, partition: alice) != nil)
            #expect(!store.recordServed(hash, at: t0) && !store.recordServed(hash, partition: bob, at: t0))
            #expect(store.recordServed(hash, partition: alice, at: t0))
            #expect(store.get(sharedHash)?.bytes == shared && store.get(sharedHash, partition: alice) == nil)
            #expect(store.records.count == 2 && Set(store.hashes) == [hash, sharedHash])
            try store.flush()
            try store.close()
            store = try SQLiteDictionaryStore(directory: directory)
        }
    }

    @Test func identicalBytesAreARecordPerPartitionAndOneBlob() throws {
        let directory = temporaryStorePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = Array("the same feed for everyone".utf8) + [UInt8](repeating: 5, count: 300)
        let store = try SQLiteDictionaryStore(directory: directory)
        let hash = try store.put(bytes, description: description(alice, id: "a"), now: t0)
        #expect(store.get(hash, partition: bob) == nil && store.get(hash) == nil)
        try store.put(bytes, description: description(bob, id: "b"), now: t0.addingTimeInterval(1))
        try store.put(bytes, description: description(nil, id: "s"), now: t0.addingTimeInterval(2))
        for (partition, id) in [(alice, "a"), (bob, "b"), (nil, "s")] as [(String?, String)] {
            let found = try #require(store.get(hash, partition: partition))
            #expect(found.bytes == bytes && found.metadata.id == id && found.metadata.partition == partition)
        }
        #expect(store.records.count == 3 && store.hashes == [hash] && store.totalByteCount == bytes.count)
    }

    @Test func retentionFreesTheBytesWithTheirLastRecordAndReportsPartitions() throws {
        let directory = temporaryStorePath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteDictionaryStore(directory: directory, retention: DictionaryRetention(maxTotalBytes: 350))
        let shared = [UInt8](repeating: 7, count: 200)
        let hash = try store.put(shared, description: description(alice), now: t0)
        try store.put(shared, description: description(bob), now: t0.addingTimeInterval(5))
        #expect(store.totalByteCount == 200)
        // 200 more bytes pass the budget: alice's record goes first (least recently served), the bytes
        // stay for bob; then bob's, and the bytes go with it.
        let other = try store.put([UInt8](repeating: 8, count: 200), description: description(nil), now: t0.addingTimeInterval(10))
        #expect(Set(store.hashes) == [other])
        #expect(store.get(hash, partition: bob) == nil && store.totalByteCount == 200)
        let removed = store.prune(now: t0.addingTimeInterval(20))
        #expect(removed == [DictionaryRemoval(hash: hash, reason: .totalBytes, partition: alice),
                            DictionaryRemoval(hash: hash, reason: .totalBytes, partition: bob)])
    }
}
