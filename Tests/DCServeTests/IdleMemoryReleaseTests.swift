@testable import DCServe
import DictionaryCodec
import DictionaryStoreSQLite
import DictionaryTransport
import Foundation
import Locking
import Logging
import Testing
import TestSupport

/// What is given back when traffic stops changes no answer: the live index moved into fresh storage
/// answers every later operation exactly as the index left alone; the store forgetting which pairs it
/// holds still answers `recordServed` truthfully; the set of hashes stored this run stays bounded.
@Suite struct IdleMemoryReleaseTests {
    func h(_ i: Int) -> DictionaryHash { SHA256.hash(Array("version \(i)".utf8)) }

    /// Two indexes get the same random operations (offers, verdicts, drops taken) over few partitions
    /// and tight budgets, so versions are superseded, evicted, refused and tombstoned; one of them is
    /// compacted every few operations. Every answer and count must agree.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func aCompactedIndexAnswersLikeTheOriginal(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        let plain = LiveVersionIndex(limits: ["calendar": 2, "news": 3], maxBytes: 2_000, maxEntries: 12, maxTombstones: 20)
        let compacted = LiveVersionIndex(limits: ["calendar": 2, "news": 3], maxBytes: 2_000, maxEntries: 12, maxTombstones: 20)
        var versions = 0
        for step in 0..<3_000 {
            let now = Double(step)
            let partition = "user-\(Int.random(in: 0..<8, using: &rng))-" + String(repeating: "p", count: 40)
            let rule = Bool.random(using: &rng) ? "calendar" : "news"
            let key = LiveVersionIndex.SlotKey(rule: rule, partition: partition, path: "/api/\(rule)")
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<4:
                versions += 1
                let bytes = Int.random(in: 50...400, using: &rng), keep = Double(Int.random(in: 0...30, using: &rng))
                #expect(plain.offer(h(versions), at: key, bytes: bytes, keepSeconds: keep, now: now)
                        == compacted.offer(h(versions), at: key, bytes: bytes, keepSeconds: keep, now: now), "step \(step)")
            case 4..<9:
                let named = h(Int.random(in: max(1, versions - 30)...max(1, versions), using: &rng))
                #expect(plain.verdict(named, partition: partition, now: now) == compacted.verdict(named, partition: partition, now: now),
                        "step \(step)")
            default:
                #expect(plain.takeDropped() == compacted.takeDropped(), "step \(step)")
            }
            #expect(plain.count == compacted.count && plain.totalBytes == compacted.totalBytes && plain.refused == compacted.refused)
            if step % 7 == 0 { compacted.compact() }
        }
        #expect(versions > 1_000 && plain.refused > 0)
    }

    /// A process idle from its start (nothing released yet) goes through idle intervals without
    /// releasing anything, and without trapping on the "resident after the last release" it has
    /// not measured yet.
    @Test func idleIntervalsBeforeAnyReleaseDoNothing() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("idle-release-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try SQLiteDictionaryStore(directory: dir)
        let releases = Locked(0)
        // Every interval counts as idle (any CPU use is below a share of a billion cores).
        let idle = IdleMemoryRelease(store: store, interval: 0.01, idleShare: 1e9, logger: Logger(label: "test"),
                                     release: { releases.withLock { $0 += 1 } })
        Thread.sleep(forTimeInterval: 0.5)
        idle.cancel()
        #expect(releases.withLock { $0 } == 0)
    }

    @Test func theStoreForgettingWhatItHoldsStillAnswersRecordServed() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("idle-release-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try SQLiteDictionaryStore(directory: dir)
        let bytes = Array("a dictionary worth keeping".utf8)
        let hash = SHA256.hash(bytes)
        _ = try store.put(bytes, description: DictionaryDescription(pattern: try URLPattern("/a/*", base: nil), rule: "r", sourcePath: "/a/1"), now: Date())
        #expect(store.recordServed(hash, at: Date()))
        store.releaseMemory()
        #expect(store.recordServed(hash, at: Date()), "answered by a read once no longer remembered")
        #expect(!store.recordServed(h(99), at: Date()))
    }
}
