import DictionaryCodec
import DictionaryTransport
import Foundation
import Testing
import Locking

@Suite struct VariantCacheTests {
    static func key(_ i: UInt8, dictionary: DictionaryHash? = nil, coding: ContentCoding = .br) -> VariantKey {
        VariantKey(resource: DictionaryHash(bytes: [UInt8](repeating: i, count: 32))!, dictionary: dictionary, coding: coding)
    }

    @Test func hitsMissesAndKeysAreDistinct() {
        let cache = VariantCache(budget: 1_000)
        #expect(cache.bestEntry(for: Self.key(1)) == nil)
        cache.insert(CachedVariant(bytes: [1, 2, 3], level: 5), for: Self.key(1))
        #expect(cache.bestEntry(for: Self.key(1)) == CachedVariant(bytes: [1, 2, 3], level: 5))
        #expect(cache.bestEntry(for: Self.key(1, coding: .gzip)) == nil)
        #expect(cache.bestEntry(for: Self.key(1, dictionary: referenceHash)) == nil)
        #expect(cache.bestEntry(resource: Self.key(1).resource, dictionary: nil, coding: .br)?.level == 5)
        let stats = cache.stats
        #expect(stats.hits == 2 && stats.misses == 3 && stats.entries == 1 && stats.bytes == 3)
    }

    @Test func aBetterLevelReplacesAndAWorseOneDoesNot() {
        let cache = VariantCache(budget: 1_000)
        let k = Self.key(1, dictionary: referenceHash, coding: .dcz)
        #expect(cache.insert(CachedVariant(bytes: [UInt8](repeating: 0, count: 100), level: 3), for: k))
        #expect(cache.insert(CachedVariant(bytes: [UInt8](repeating: 0, count: 60), level: 19), for: k))
        #expect(!cache.insert(CachedVariant(bytes: [UInt8](repeating: 0, count: 90), level: 3), for: k))
        #expect(!cache.insert(CachedVariant(bytes: [UInt8](repeating: 0, count: 50), level: 19), for: k))
        #expect(cache.bestEntry(for: k)?.level == 19)
        #expect(cache.bestEntry(for: k)?.bytes.count == 60)
        #expect(cache.stats.bytes == 60)
        #expect(cache.stats.upgrades == 1)
        #expect(cache.stats.rejected == 2)
    }

    @Test func evictsLeastRecentlyUsedWithinBudget() {
        let cache = VariantCache(budget: 300)
        for i in UInt8(0)..<3 { cache.insert(CachedVariant(bytes: [UInt8](repeating: i, count: 100), level: 1), for: Self.key(i)) }
        _ = cache.bestEntry(for: Self.key(0))  // 0 is now more recent than 1
        cache.insert(CachedVariant(bytes: [UInt8](repeating: 9, count: 100), level: 1), for: Self.key(9))
        #expect(cache.bestEntry(for: Self.key(1)) == nil)
        #expect(cache.bestEntry(for: Self.key(0)) != nil)
        #expect(cache.bestEntry(for: Self.key(2)) != nil)
        #expect(cache.bestEntry(for: Self.key(9)) != nil)
        #expect(cache.stats.evictions == 1)
        #expect(cache.stats.bytes == 300)
        // A body larger than the budget is not cached and evicts nothing.
        #expect(!cache.insert(CachedVariant(bytes: [UInt8](repeating: 0, count: 301), level: 1), for: Self.key(7)))
        #expect(cache.stats.entries == 3)
        // An upgrade that grows the entry can evict others, never itself.
        cache.insert(CachedVariant(bytes: [UInt8](repeating: 0, count: 250), level: 2), for: Self.key(0))
        #expect(cache.bestEntry(for: Self.key(0))?.level == 2)
        #expect(cache.stats.bytes <= 300)
    }

    @Test func removeAllForAResource() {
        let cache = VariantCache(budget: 1_000)
        cache.insert(CachedVariant(bytes: [1], level: 1), for: Self.key(1))
        cache.insert(CachedVariant(bytes: [1], level: 1), for: Self.key(1, coding: .gzip))
        cache.insert(CachedVariant(bytes: [1], level: 1), for: Self.key(2))
        cache.removeAll(resource: Self.key(1).resource)
        #expect(cache.stats.entries == 1)
        #expect(cache.bestEntry(for: Self.key(2)) != nil)
    }

    @Test func concurrentUseKeepsTheBudgetAndCounters() async {
        let cache = VariantCache(budget: 5_000)
        await withTaskGroup(of: Void.self) { group in
            for t in 0..<8 {
                group.addTask {
                    for i in 0..<500 {
                        let k = Self.key(UInt8((t * 31 + i) % 97))
                        if cache.bestEntry(for: k) == nil {
                            cache.insert(CachedVariant(bytes: [UInt8](repeating: 0, count: 100), level: i % 3), for: k)
                        }
                    }
                }
            }
        }
        let stats = cache.stats
        #expect(stats.bytes <= 5_000)
        #expect(stats.hits + stats.misses == 8 * 500)
        #expect(stats.entries == stats.bytes / 100)
    }
}

@Suite struct BackgroundEncoderTests {
    @Test func runsJobsAndDeduplicatesPendingKeys() async {
        let encoder = BackgroundEncoder<Int>(maxConcurrent: 1)
        let gate = Locked(false)
        let ran = Locked<[Int]>([])
        // The first job blocks until released, so the later submissions are still pending.
        #expect(encoder.submit(0) {
            while !gate.withLock({ $0 }) { usleep(1_000) }
            ran.withLock { $0.append(0) }
        })
        #expect(encoder.submit(1) { ran.withLock { $0.append(1) } })
        #expect(!encoder.submit(1) { ran.withLock { $0.append(100) } })
        #expect(!encoder.submit(0) { ran.withLock { $0.append(200) } })
        #expect(encoder.submit(2) { ran.withLock { $0.append(2) } })
        gate.withLock { $0 = true }
        await encoder.waitUntilIdle()
        #expect(ran.withLock { $0 } == [0, 1, 2])
        #expect(encoder.completedCount == 3)
        #expect(encoder.droppedCount == 2)
        // A finished key can be submitted again.
        #expect(encoder.submit(1) { ran.withLock { $0.append(11) } })
        await encoder.waitUntilIdle()
        #expect(ran.withLock { $0.last } == 11)
    }

    @Test func boundsThePendingQueueAndConcurrency() async {
        let encoder = BackgroundEncoder<Int>(maxConcurrent: 2, maxPending: 4)
        let gate = Locked(false)
        let running = Locked((now: 0, peak: 0))
        var accepted = 0
        for i in 0..<20 {
            if encoder.submit(i, {
                running.withLock { $0.now += 1; $0.peak = max($0.peak, $0.now) }
                while !gate.withLock({ $0 }) { usleep(1_000) }
                running.withLock { $0.now -= 1 }
            }) { accepted += 1 }
        }
        #expect(accepted <= 6)  // at most 2 running + 4 pending
        #expect(accepted >= 4)
        gate.withLock { $0 = true }
        await encoder.waitUntilIdle()
        #expect(running.withLock { $0.peak } <= 2)
        #expect(encoder.completedCount == accepted)
    }

    @Test func fillsTheVariantCacheWithTheBestLevelLater() async {
        let cache = VariantCache(budget: 10_000)
        let encoder = BackgroundEncoder<VariantKey>()
        let key = VariantCacheTests.key(5, dictionary: referenceHash, coding: .dcz)
        cache.insert(CachedVariant(bytes: [UInt8](repeating: 1, count: 500), level: 3), for: key)  // fast, in the request path
        encoder.submit(key) { cache.insert(CachedVariant(bytes: [UInt8](repeating: 1, count: 300), level: 19), for: key) }
        await encoder.waitUntilIdle()
        #expect(cache.bestEntry(for: key)?.level == 19)
    }
}
