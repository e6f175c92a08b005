@testable import DCServe
import DictionaryCodec
import DictionaryStoreSQLite
import DictionaryTransport
import Foundation
import Logging
import Testing
import Locking

/// `server.memoryBytes`: its division among the caches (the real objects an application builds get
/// their shares, explicit per-cache settings override theirs), and what the live index does when the
/// working set exceeds what can be kept (refuses new versions instead of evicting promised ones,
/// counts and logs it at most once a minute).
@Suite struct MemoryBudgetTests {
    func application(_ configure: (inout DCServeConfiguration) -> Void) throws -> (DCServeApplication, URL) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("memory-budget-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("site"), withIntermediateDirectories: true)
        var c = DCServeConfiguration()
        c.site.root = dir.appendingPathComponent("site").path
        c.store.path = dir.appendingPathComponent("store").path
        c.compression.precompress = false
        configure(&c)
        try c.validate()
        return (try DCServeApplication(configuration: c), dir)
    }

    @Test func sharesAddUpToTheTotalAndOverridesReplaceTheirShare() {
        let budget = MemoryBudget(total: 1000 << 20)
        #expect(MemoryBudget.Consumer.allCases.map { budget[$0] }.reduce(0, +) == 1000 << 20)
        #expect(budget[.dictionaries] == 250 << 20 && budget[.variants] == 150 << 20 && budget[.liveIndex] == 150 << 20)
        #expect(budget[.unmanaged] == 250 << 20)
        let overridden = MemoryBudget(total: 1000 << 20, dictionaryOverride: 32 << 20, variantOverride: 8 << 20)
        #expect(overridden[.dictionaries] == 32 << 20)
        // The variant cache's old companions follow it as before: a quarter and a half of it.
        #expect(overridden[.variants] == 8 << 20 && overridden[.responseMemo] == 2 << 20 && overridden[.staticBodies] == 4 << 20)
        #expect(overridden[.storeCache] == budget[.storeCache])
        #expect(MemoryBudget(total: 2 << 20).liveIndexEntries == 1024, "at least 1,024 versions")
        #expect(MemoryBudget(total: 1000 << 20).liveIndexEntries == (150 << 20) / (512 + 256 / 4))
        #expect(MemoryBudget(total: 1000 << 20).liveIndexTombstones == (150 << 20) / (512 + 256 / 4) / 4)
    }

    @Test func theApplicationsCachesGetTheirShares() throws {
        let (app, dir) = try application { $0.server.memoryBytes = 200 << 20 }
        defer { app.stop(); try? FileManager.default.removeItem(at: dir) }
        let budget = MemoryBudget(total: 200 << 20)
        #expect(app.budget == budget)
        #expect(app.library.maxBytes == budget[.dictionaries])
        #expect(app.variants.budget == budget[.variants])
        #expect(app.resources.budget == budget[.staticBodies])
        #expect(app.compressionMiddleware.memo.byteBudget == budget[.responseMemo])
        #expect(app.compressionMiddleware.live.maxEntries == budget.liveIndexEntries)
        #expect(app.compressionMiddleware.live.maxTombstones == budget.liveIndexTombstones)
        let used = app.memoryUse()
        #expect(Set(used.keys) == Set(MemoryBudget.Consumer.allCases))
        #expect(used[.unmanaged]! > 0, "the process's resident memory less the caches'")
        #expect(used[.storeCache]! > 0, "SQLite's memory")
    }

    @Test func explicitPerCacheSettingsStillWin() throws {
        let (app, dir) = try application { c in
            c.compression.variantCacheBytes = 8 << 20
            c.compression.dictionaryMemoryBytes = 32 << 20
        }
        defer { app.stop(); try? FileManager.default.removeItem(at: dir) }
        #expect(app.library.maxBytes == 32 << 20 && app.variants.budget == 8 << 20)
        #expect(app.compressionMiddleware.memo.byteBudget == 2 << 20 && app.resources.budget == 4 << 20)
    }

    @Test func tooSmallABudgetIsAConfigurationError() {
        var c = DCServeConfiguration()
        c.server.memoryBytes = 1 << 20
        #expect(throws: ConfigurationError.self) { try c.validate() }
    }

    // MARK: Over budget

    func h(_ s: String) -> DictionaryHash { SHA256.hash(Array(s.utf8)) }
    func key(_ p: String) -> LiveVersionIndex.SlotKey { .init(rule: "calendar", partition: p, path: "/api/calendar") }

    @Test func newVersionsAreRefusedRatherThanEvictVersionsWithinTheirLifetime() {
        // Room for 3 versions of 100 bytes; each user keeps 2; clients may use a version for 1000 s.
        let index = LiveVersionIndex(limits: ["calendar": 2], maxBytes: 300)
        #expect(index.offer(h("a1"), at: key("a"), bytes: 100, keepSeconds: 1000, now: 0))
        #expect(index.offer(h("b1"), at: key("b"), bytes: 100, keepSeconds: 1000, now: 1))
        #expect(index.offer(h("c1"), at: key("c"), bytes: 100, keepSeconds: 1000, now: 2))
        // A fourth user: every retained version is its user's newest and within its lifetime.
        #expect(!index.offer(h("d1"), at: key("d"), bytes: 100, keepSeconds: 1000, now: 3))
        #expect(index.refused == 1 && index.count == 3)
        #expect(index.verdict(h("d1"), partition: "d", now: 3) == .notLive)
        for p in ["a", "b", "c"] { #expect(index.verdict(h("\(p)1"), partition: p, now: 4) == .allowed) }
        // A returning user's new version is admitted: its previous one is superseded and goes first —
        // after the request that brought the new one (which names the previous one for its delta).
        #expect(index.offer(h("a2"), at: key("a"), bytes: 100, keepSeconds: 1000, now: 5))
        #expect(index.verdict(h("a1"), partition: "a", now: 5) == .allowed)
        #expect(index.verdict(h("a2"), partition: "a", now: 5) == .allowed)
        #expect(index.totalBytes == 400, "one version over until the next add")
        #expect(index.offer(h("b2"), at: key("b"), bytes: 100, keepSeconds: 1000, now: 6))
        #expect(index.verdict(h("a1"), partition: "a", now: 6) == .pastRetention)
        #expect(index.verdict(h("b1"), partition: "b", now: 6) == .allowed)
        #expect(index.totalBytes == 400)
        // Once a version's lifetime is over (its client's copy is stale), it makes room: b1 (superseded)
        // first, then c1 (last used at 4).
        #expect(index.offer(h("d1"), at: key("d"), bytes: 100, keepSeconds: 1000, now: 1005))
        #expect(index.verdict(h("b1"), partition: "b", now: 1005) == .pastRetention)
        #expect(index.verdict(h("c1"), partition: "c", now: 1005) == .pastRetention)
        #expect(index.verdict(h("d1"), partition: "d", now: 1005) == .allowed)
        #expect(index.count == 3 && index.totalBytes == 300 && index.refused == 1)
    }

    @Test func theEntryCapRefusesLikeTheByteBudget() {
        let index = LiveVersionIndex(limits: ["calendar": 2], maxEntries: 2)
        #expect(index.offer(h("a1"), at: key("a"), bytes: 10, keepSeconds: 60, now: 0))
        #expect(index.offer(h("b1"), at: key("b"), bytes: 10, keepSeconds: 60, now: 0))
        #expect(!index.offer(h("c1"), at: key("c"), bytes: 10, keepSeconds: 60, now: 1))
        // b's second version takes nothing of a's: b1 is superseded (and evicted by the next add).
        #expect(index.offer(h("b2"), at: key("b"), bytes: 10, keepSeconds: 60, now: 2))
        #expect(index.count == 3 && index.verdict(h("a1"), partition: "a", now: 2) == .allowed)
        #expect(!index.offer(h("c1"), at: key("c"), bytes: 10, keepSeconds: 60, now: 3))
        #expect(index.count == 3, "a refused offer changes nothing")
        #expect(index.offer(h("a2"), at: key("a"), bytes: 10, keepSeconds: 60, now: 4))
        #expect(index.count == 3 && index.verdict(h("b1"), partition: "b", now: 4) == .pastRetention)
    }

    /// Remembered removals are capped (the budget's share covers them) and counted, oldest forgotten first.
    @Test func tombstonesAreCappedOldestForgottenFirst() {
        let index = LiveVersionIndex(limits: ["calendar": 1], maxTombstones: 3)
        for v in 1...10 { index.add(h("a\(v)"), at: key("a"), now: Double(v)) }
        #expect(index.count == 1 && index.tombstoneCount == 3)
        #expect(index.verdict(h("a9"), partition: "a", now: 11) == .pastRetention)
        #expect(index.verdict(h("a7"), partition: "a", now: 11) == .pastRetention)
        #expect(index.verdict(h("a6"), partition: "a", now: 11) == .notLive, "forgotten: looked up in the store by partition")
    }

    @Test func withoutLifetimesTheLeastRecentlyUsedIsEvictedAsBefore() {
        let index = LiveVersionIndex(limits: ["calendar": 2], maxBytes: 200)
        #expect(index.offer(h("a1"), at: key("a"), bytes: 100, keepSeconds: 0, now: 0))
        #expect(index.offer(h("b1"), at: key("b"), bytes: 100, keepSeconds: 0, now: 1))
        #expect(index.offer(h("c1"), at: key("c"), bytes: 100, keepSeconds: 0, now: 2))
        #expect(index.verdict(h("a1"), partition: "a", now: 2) == .pastRetention && index.refused == 0)
    }

    /// Versions the index drops leave the store (and the library) at the next removal pass, so the
    /// store's own byte budget never evicts a version the index still keeps in their place.
    @Test func droppedVersionsLeaveTheStore() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dropped-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try SQLiteDictionaryStore(directory: dir)
        let library = DictionaryLibrary(store: store)
        let index = LiveVersionIndex(limits: ["calendar": 2])
        var hashes: [DictionaryHash] = []
        for v in 1...3 {
            let bytes = Array("calendar of u1, version \(v)".utf8) + [UInt8](repeating: UInt8(v), count: 400)
            let description = DictionaryDescription(pattern: try URLPattern("/api/calendar", base: nil), rule: "calendar",
                                                    sourcePath: "/api/calendar", maxAge: 600, partition: "u1")
            hashes.append(try store.put(bytes, description: description, now: Date()))
            #expect(index.offer(hashes.last!, at: key("u1"), bytes: bytes.count, keepSeconds: 600))
        }
        #expect(library.lookup(hashes[0], partition: "u1") != nil)
        DCServeApplication.removeDropped(index, store: store, library: library)
        #expect(store.get(hashes[0], partition: "u1") == nil && !library.isLoaded(hashes[0]))
        #expect(store.get(hashes[1], partition: "u1") != nil && store.get(hashes[2], partition: "u1") != nil)
        #expect(index.takeDropped().isEmpty, "handed over once")
    }

    /// Rebuilt from the store after a restart, each URL's newest version is the one stored last, even
    /// when the previous one was named (its last-served time moved) after the newest was stored: the next
    /// version then pushes out the oldest, not the one the client holds.
    @Test func aRebuiltIndexKeepsTheVersionOrderOfEachURL() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("rebuild-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try SQLiteDictionaryStore(directory: dir)
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        var hashes: [DictionaryHash] = []
        for v in 1...2 {
            let description = DictionaryDescription(pattern: try URLPattern("/api/calendar", base: nil), rule: "calendar",
                                                    sourcePath: "/api/calendar", maxAge: 86_400, partition: "u1")
            hashes.append(try store.put(Array("calendar v\(v)".utf8) + [UInt8](repeating: 7, count: 300), description: description,
                                        now: t0 + Double(v)))
        }
        // v1 named by its client after v2 was stored (the request that brought v2).
        #expect(store.recordServed(hashes[0], partition: "u1", at: t0 + 3))
        try store.flush()
        let index = LiveVersionIndex(limits: ["calendar": 2])
        index.load(from: store)
        let v3 = SHA256.hash(Array("calendar v3".utf8))
        index.add(v3, at: .init(rule: "calendar", partition: "u1", path: "/api/calendar"), bytes: 300, now: 1_800_000_004)
        #expect(index.verdict(hashes[1], partition: "u1") == .allowed, "the version the client holds")
        #expect(index.verdict(hashes[0], partition: "u1") == .pastRetention)
    }

    final class Lines: Sendable {
        let lines = Locked<[String]>([])
    }

    struct Capture: LogHandler {
        let sink: Lines
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .warning
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let text = "\(event.message) " + (event.metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                .joined(separator: " ")
            sink.lines.withLock { $0.append(text) }
        }
    }

    @Test func refusalsAreLoggedAtMostOnceAMinute() {
        let sink = Lines()
        let warning = LiveBudgetWarning(logger: Logger(label: "test") { _ in Capture(sink: sink) })
        let index = LiveVersionIndex(limits: ["calendar": 2], maxBytes: 300)
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(warning.refused(rule: "calendar", index: index, now: t0))
        for s in 1..<60 { #expect(!warning.refused(rule: "calendar", index: index, now: t0 + Double(s))) }
        #expect(warning.refused(rule: "calendar", index: index, now: t0 + 60))
        let lines = sink.lines.withLock { $0 }
        #expect(lines.count == 2)
        #expect(lines[0].contains("refusedVersions=1") && lines[0].contains("raise store.maxBytes"))
        #expect(lines[1].contains("refusedVersions=60"), "the refusals since the previous line")
    }
}
