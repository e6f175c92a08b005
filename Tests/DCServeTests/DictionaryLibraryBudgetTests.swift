@testable import DCServe
import DictionaryCodec
import DictionaryTransport
import Foundation
import Testing
import TestSupport

/// `DictionaryLibrary`'s memory budget: prepared forms are measured (a level-19 zstd form is many
/// times its dictionary), the least recently used dictionaries are dropped to stay within
/// `maxBytes`, the newest is always kept, and a dropped one is reloaded from the store when named.
@Suite struct DictionaryLibraryBudgetTests {
    static func store() throws -> DirectoryDictionaryStore {
        let dir = uniqueTemporaryURL("library-budget").path
        return try DirectoryDictionaryStore(directory: dir, retention: DictionaryRetention())
    }

    static func bytes(_ i: Int, count: Int) -> [UInt8] {
        var rng = UInt64(i) &* 0x9E37_79B9_7F4A_7C15 | 1
        return (0..<count).map { _ in
            rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17
            return UInt8(truncatingIfNeeded: rng)
        }
    }

    @Test func storeReadsHaveTheConfiguredNumberOfThreads() throws {
        #expect(DictionaryLibrary(store: try Self.store()).storeReads.maxThreads == DictionaryLibrary.defaultStoreReadThreads)
        #expect(DictionaryLibrary(store: try Self.store(), storeReadThreads: 3).storeReads.maxThreads == 3)
    }

    @Test func preparedFormsAreCountedInTheFootprint() throws {
        let dictionary = CompressionDictionary(bytes: Self.bytes(1, count: 256 << 10))
        #expect(dictionary.memoryFootprint == 256 << 10)
        try dictionary.prepare(for: .dcz, level: 19)
        try dictionary.prepare(for: .dcb, level: 11)
        // zstd's level-19 CDict alone is several times the dictionary; brotli's form is more than it too.
        #expect(dictionary.preparedByteCount > 4 * (256 << 10), "\(dictionary.preparedByteCount)")
        dictionary.discardPreparedForms()
        #expect(dictionary.memoryFootprint == 256 << 10)
    }

    @Test func leastRecentlyUsedAreDroppedToStayWithinTheBudgetAndReloadedWhenNamed() throws {
        let store = try Self.store()
        let pattern = try URLPattern("/d/*", base: nil)
        // Budget for about three prepared 64 KiB dictionaries.
        let probe = CompressionDictionary(bytes: Self.bytes(0, count: 64 << 10))
        try probe.prepare(for: .dcz, level: 19)
        let each = probe.memoryFootprint
        let library = DictionaryLibrary(store: store, capacity: 128, maxBytes: 3 * each + each / 2)
        var hashes: [DictionaryHash] = []
        for i in 1...8 {
            let bytes = Self.bytes(i, count: 64 << 10)
            let hash = try store.put(bytes, description: DictionaryDescription(pattern: pattern), now: Date())
            hashes.append(hash)
            let (dictionary, _) = try #require(library.lookup(hash))
            try dictionary.prepare(for: .dcz, level: 19)  // what the first request against it does
            #expect(library.usage.bytes <= library.maxBytes + each, "after \(i): \(library.usage)")
        }
        #expect(library.usage.count <= 4 && library.usage.count >= 3, "\(library.usage)")
        // The newest ones are loaded (a hit leaves the generation alone); the oldest was dropped and
        // comes back from the store with the same bytes.
        let generation = library.generation
        #expect(library.lookup(hashes[7]) != nil && library.generation == generation)
        let reloaded = try #require(library.lookup(hashes[0]))
        #expect(reloaded.dictionary.hash == hashes[0] && library.generation != generation)
    }

    @Test func theNewestDictionaryIsKeptEvenAboveTheBudget() throws {
        let store = try Self.store()
        let library = DictionaryLibrary(store: store, capacity: 128, maxBytes: 0)
        let pattern = try URLPattern("/d/*", base: nil)
        for i in 1...3 {
            let dictionary = CompressionDictionary(bytes: Self.bytes(i, count: 4096))
            library.insert(dictionary, candidate: DictionaryCandidate(hash: dictionary.hash, pattern: pattern))
            #expect(library.usage.count == 1)
            #expect(library.lookup(dictionary.hash)?.dictionary === dictionary)
        }
    }

    /// What the middleware asks before answering on an event loop: a store read is needed only for a
    /// (partition, hash) the store holds and the library has not loaded.
    @Test func aStoreReadIsNeededOnlyForAStoredDictionaryNotLoaded() throws {
        let store = try Self.store()
        let library = DictionaryLibrary(store: store, capacity: 128, maxBytes: 1 << 30)
        let pattern = try URLPattern("/d/*", base: nil)
        let shared = try store.put(Self.bytes(1, count: 4096), description: DictionaryDescription(pattern: pattern), now: Date())
        let own = try store.put(Self.bytes(2, count: 4096),
                                description: DictionaryDescription(pattern: pattern, partition: String(repeating: "a", count: 64)), now: Date())
        let unknown = CompressionDictionary(bytes: Self.bytes(3, count: 4096)).hash
        #expect(library.needsStoreRead(shared, partition: nil) && !library.isLoaded(shared))
        #expect(library.needsStoreRead(own, partition: String(repeating: "a", count: 64)))
        #expect(!library.needsStoreRead(own, partition: nil) && !library.needsStoreRead(own, partition: String(repeating: "b", count: 64)))
        #expect(!library.needsStoreRead(unknown, partition: nil))
        #expect(library.lookup(shared) != nil)
        #expect(!library.needsStoreRead(shared, partition: nil) && library.isLoaded(shared))
    }

    /// Identical bytes handed to two partitions are loaded for each, both held at once, sharing one
    /// prepared dictionary counted once; a partition the store does not list for the hash gets nothing.
    @Test func identicalBytesLoadedForTwoPartitionsShareOnePreparedDictionary() throws {
        let store = try Self.store()
        let bytes = Self.bytes(9, count: 32 << 10)
        let (alice, bob) = (String(repeating: "a1", count: 32), String(repeating: "b2", count: 32))
        func put(_ partition: String) throws -> DictionaryHash {
            try store.put(bytes, description: DictionaryDescription(pattern: try URLPattern("/latest_news", base: nil),
                                                                    partition: partition), now: Date())
        }
        let hash = try put(alice)
        #expect(try put(bob) == hash)
        let library = DictionaryLibrary(store: store)
        let forAlice = try #require(library.lookup(hash, partition: alice)).dictionary
        let forBob = try #require(library.lookup(hash, partition: bob)).dictionary
        #expect(forAlice === forBob)
        #expect(library.lookup(hash, partition: nil) == nil && library.lookup(hash, partition: "c3") == nil)
        #expect(library.usage.count == 2 && library.usage.bytes == bytes.count)
        // Both stay loaded: alice's entry answers without the store (a hit leaves the generation alone).
        let generation = library.generation
        #expect(library.lookup(hash, partition: alice)?.dictionary === forAlice && library.generation == generation)
        #expect(!library.needsStoreRead(hash, partition: bob))
        library.forget(hash, partition: alice)
        #expect(library.needsStoreRead(hash, partition: alice) && library.isLoaded(hash))
    }
}
