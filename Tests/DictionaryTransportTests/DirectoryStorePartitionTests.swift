import DictionaryCodec
import DictionaryTransport
import Foundation
import Testing

/// The directory store answers by (partition, hash): a partitioned dictionary is never returned for
/// another partition or for none, in memory or after a restart (issues #14, #15).
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
            // The same bytes stored for bob do not make alice's record bob's (one record per hash here:
            // bob misses, he never gets alice's record).
            try store.put(bytes, description: description(bob), now: t0.addingTimeInterval(1))
            #expect(store.get(hash, partition: bob) == nil && store.get(hash, partition: alice) != nil)
            try store.flush()
            store = try DirectoryDictionaryStore(directory: directory)
        }
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
