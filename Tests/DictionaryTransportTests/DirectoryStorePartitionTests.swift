import DictionaryCodec
import DictionaryTransport
import Foundation
import Testing
import TestSupport

/// The directory store answers by (partition, hash): a partitioned dictionary is never returned for
/// another partition or for none, in memory or after a restart.
@Suite struct DirectoryStorePartitionTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let alice = String(repeating: "a1", count: 32)
    let bob = String(repeating: "b2", count: 32)

    func description(_ partition: String?) -> DictionaryDescription {
        DictionaryDescription(pattern: try! URLPattern("/api/calendar", base: nil), rule: "calendar",
                              sourcePath: "/api/calendar", maxAge: 86_400, partition: partition)
    }

    @Test func aPartitionedDictionaryIsFoundOnlyByItsPartition() throws {
        let directory = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = Array("alice's calendar".utf8) + [UInt8](repeating: 3, count: 200)
        let shared = Array("a shared dictionary".utf8) + [UInt8](repeating: 4, count: 200)
        var store = try DirectoryDictionaryStore(directory: directory)
        let hash = try store.put(bytes, description: description(alice), now: t0)
        let sharedHash = try store.put(shared, description: description(nil), now: t0)
        for _ in 0..<2 {  // in memory, then after a restart (records read back from disk)
            #expect(store.get(hash, partition: alice)?.bytes == bytes)
            #expect(store.get(hash, partition: alice)?.metadata.partition == alice)
            #expect(store.get(hash, partition: bob) == nil && store.get(hash) == nil)
            #expect(store.metadata(hash) == nil && store.metadata(hash, partition: bob) == nil)
            #expect(store.metadata(hash, partition: alice) != nil)
            #expect(!store.recordServed(hash, at: t0) && !store.recordServed(hash, partition: bob, at: t0))
            #expect(store.recordServed(hash, partition: alice, at: t0))
            // A shared dictionary is not any partition's.
            #expect(store.get(sharedHash)?.bytes == shared && store.get(sharedHash, partition: alice) == nil)
            #expect(store.records.count == 2 && Set(store.hashes) == [hash, sharedHash])
            try store.flush()
            store = try DirectoryDictionaryStore(directory: directory)
        }
    }

    /// The same bytes handed to alice, to bob and as a shared dictionary (a feed every user gets
    /// alike): three records, each found by its own partition with its own description, one file of
    /// bytes; in memory and after a restart.
    @Test func identicalBytesAreARecordPerPartitionAndOneFile() throws {
        let directory = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = Array("the same feed for everyone".utf8) + [UInt8](repeating: 5, count: 300)
        func described(_ partition: String?, id: String) -> DictionaryDescription {
            DictionaryDescription(pattern: try! URLPattern("/latest_news", base: nil), id: DictionaryID(id), rule: "news",
                                  sourcePath: "/latest_news", maxAge: 600, partition: partition)
        }
        var store = try DirectoryDictionaryStore(directory: directory)
        let hash = try store.put(bytes, description: described(alice, id: "a"), now: t0)
        #expect(store.get(hash, partition: bob) == nil && store.get(hash) == nil)
        #expect(try store.put(bytes, description: described(bob, id: "b"), now: t0.addingTimeInterval(1)) == hash)
        try store.put(bytes, description: described(nil, id: "s"), now: t0.addingTimeInterval(2))
        for _ in 0..<2 {
            for (partition, id) in [(alice, "a"), (bob, "b"), (nil, "s")] as [(String?, String)] {
                let found = try #require(store.get(hash, partition: partition))
                #expect(found.bytes == bytes && found.metadata.partition == partition && found.metadata.id == id)
                #expect(store.metadata(hash, partition: partition)?.id == id)
                #expect(store.recordServed(hash, partition: partition, at: t0.addingTimeInterval(5)))
            }
            #expect(store.get(hash, partition: String(repeating: "c3", count: 32)) == nil)
            #expect(store.records.count == 3 && store.hashes == [hash] && store.totalByteCount == bytes.count)
            let files = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix(hash.hex) }.sorted()
            #expect(files == [hash.hex, hash.hex + ".json",
                              hash.hex + "." + DirectoryDictionaryStore.partitionTag(alice) + ".json",
                              hash.hex + "." + DirectoryDictionaryStore.partitionTag(bob) + ".json"].sorted())
            try store.flush()
            store = try DirectoryDictionaryStore(directory: directory)
        }
    }

    /// Retention removes records; the bytes go with the last record of their hash, and the byte budget
    /// counts them once.
    @Test func retentionFreesTheBytesWithTheirLastRecord() throws {
        let directory = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try DirectoryDictionaryStore(directory: directory, retention: DictionaryRetention(maxTotalBytes: 500))
        let feed = [UInt8](repeating: 7, count: 300)
        let hash = try store.put(feed, description: description(alice), now: t0)
        try store.put(feed, description: description(bob), now: t0.addingTimeInterval(10))
        #expect(store.prune(now: t0.addingTimeInterval(20)).isEmpty)  // 300 bytes on disk, not 600
        let other = try store.put([UInt8](repeating: 8, count: 300), description: description(alice), now: t0.addingTimeInterval(30))
        // 600 bytes: alice's old record goes first (least recently served), but bob still holds the bytes,
        // so bob's record goes too before the budget is met.
        let removed = store.prune(now: t0.addingTimeInterval(40))
        #expect(removed == [DictionaryRemoval(hash: hash, reason: .totalBytes, partition: alice),
                            DictionaryRemoval(hash: hash, reason: .totalBytes, partition: bob)])
        #expect(!FileManager.default.fileExists(atPath: directory + "/" + hash.hex))
        #expect(store.get(other, partition: alice) != nil && store.hashes == [other])

        // With a larger budget one partition's record can go while another keeps the bytes.
        let roomy = try DirectoryDictionaryStore(directory: makeTemporaryDirectory(),
                                                 retention: DictionaryRetention(maxCountPerRule: 1, keepPastExpiry: 1_000_000))
        defer { try? FileManager.default.removeItem(atPath: roomy.directory) }
        let shared = try roomy.put(feed, description: description(alice), now: t0)
        try roomy.put(feed, description: description(bob), now: t0.addingTimeInterval(10))
        // Both expired (max-age 1 day); the per-rule count cap keeps the most recently served.
        #expect(roomy.prune(now: t0.addingTimeInterval(200_000)) == [DictionaryRemoval(hash: shared, reason: .ruleCount, partition: alice)])
        #expect(roomy.get(shared, partition: bob)?.bytes == feed && roomy.get(shared, partition: alice) == nil)
        #expect(FileManager.default.fileExists(atPath: roomy.directory + "/" + shared.hex))
    }

    /// A store written before records were kept per partition (`<hex>.json` naming a partition) opens
    /// with that record moved to its partition's name; a record under another partition's name is not
    /// ours to use.
    @Test func olderLayoutIsMovedAndMisnamedRecordsAreLeftAlone() throws {
        let directory = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = Array("alice's calendar, older layout".utf8)
        let hash = try DirectoryDictionaryStore(directory: directory).put(bytes, description: description(alice), now: t0)
        let aliceName = hash.hex + "." + DirectoryDictionaryStore.partitionTag(alice) + ".json"
        #expect(rename(directory + "/" + aliceName, directory + "/" + hash.hex + ".json") == 0)
        let reopened = try DirectoryDictionaryStore(directory: directory)
        #expect(reopened.get(hash, partition: alice)?.bytes == bytes && reopened.get(hash) == nil)
        #expect(FileManager.default.fileExists(atPath: directory + "/" + aliceName))
        #expect(!FileManager.default.fileExists(atPath: directory + "/" + hash.hex + ".json"))

        // alice's record copied under bob's name: never bob's (nor alice's twice), and left in place.
        let bobName = hash.hex + "." + DirectoryDictionaryStore.partitionTag(bob) + ".json"
        try FileManager.default.copyItem(atPath: directory + "/" + aliceName, toPath: directory + "/" + bobName)
        let third = try DirectoryDictionaryStore(directory: directory)
        #expect(third.get(hash, partition: bob) == nil && third.get(hash, partition: alice) != nil)
        #expect(third.records.count == 1 && FileManager.default.fileExists(atPath: directory + "/" + bobName))
    }

    @Test func retentionReportsThePartitionOfWhatItRemoves() throws {
        let directory = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try DirectoryDictionaryStore(directory: directory, retention: DictionaryRetention(maxTotalBytes: 300))
        let old = try store.put([UInt8](repeating: 1, count: 200), description: description(alice), now: t0)
        try store.put([UInt8](repeating: 2, count: 200), description: description(bob), now: t0.addingTimeInterval(10))
        #expect(store.prune(now: t0.addingTimeInterval(20)) == [DictionaryRemoval(hash: old, reason: .totalBytes, partition: alice)])
    }
}
