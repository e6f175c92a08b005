import DictionaryClient
import DictionaryClientSystemCodecs
import DictionaryCodec
import Foundation
import HTTPTypes
import Testing
import TestSupport

@Suite struct StoreTests {
    let clock = TestClock()

    func entry(_ name: String, partition: String = "", size: Int, at date: Date) -> (StoredDictionary, [UInt8]) {
        let body = [UInt8](repeating: UInt8(truncatingIfNeeded: name.hashValue), count: size - name.utf8.count) + Array(name.utf8)
        return (StoredDictionary(partition: partition, origin: "https://example.com", sourceURL: "https://example.com/\(name)",
                                 match: "/\(name)/*", matchDestinations: [], id: nil, hashHex: SHA256.hash(body).hex,
                                 size: body.count, fetchedAt: date, expiresAt: date + 3600, lastUsedAt: date), body)
    }

    @Test func diskStoreSurvivesReopeningAndLeavesNoTemporaryFiles() throws {
        let dir = makeTemporaryDirectory("dclient-tests")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let client = DictionaryClient(store: try ClientDictionaryStore(location: .directory(dir)), decoders: .systemLibraries, now: clock.function)
            try register(client, url: "https://example.com/a/d", body: bytes("persisted"), useAsDictionary: #"match="/a/*", id="p""#)
        }
        let reopened = DictionaryClient(store: try ClientDictionaryStore(location: .directory(dir)), decoders: .systemLibraries, now: clock.function)
        let r = try reopened.prepare(url: "https://example.com/a/x")
        #expect(r.dictionary?.bytes == bytes("persisted"))
        #expect(r.fields[.dictionaryID] == "\"p\"")
        let names = try FileManager.default.contentsOfDirectory(atPath: dir) + FileManager.default.contentsOfDirectory(atPath: dir + "/bodies")
        #expect(!names.contains { $0.hasPrefix(".tmp-") })
        let mode = try FileManager.default.attributesOfItem(atPath: dir)[.posixPermissions] as? Int
        #expect(mode == 0o700)
        // The index and every body are owner-only files.
        for file in ["index.json"] + (try FileManager.default.contentsOfDirectory(atPath: dir + "/bodies")).map({ "bodies/" + $0 }) {
            let fileMode = try FileManager.default.attributesOfItem(atPath: dir + "/" + file)[.posixPermissions] as? Int
            #expect(fileMode == 0o600, "\(file)")
        }
    }

    @Test func corruptedBodyOnDiskIsDetectedOnLoadAndRemoved() throws {
        let dir = makeTemporaryDirectory("dclient-tests")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try ClientDictionaryStore(location: .directory(dir))
        let client = DictionaryClient(store: store, decoders: .systemLibraries, now: clock.function)
        try register(client, url: "https://example.com/a/d", body: bytes("original bytes"), useAsDictionary: #"match="/a/*""#)
        let bodies = try FileManager.default.contentsOfDirectory(atPath: dir + "/bodies")
        #expect(bodies.count == 1)
        try Data("tampered bytes".utf8).write(to: URL(fileURLWithPath: dir + "/bodies/" + bodies[0]))
        let entry = try #require(store.entries().first)
        #expect(throws: DictionaryClientError.storedDictionaryCorrupt(expected: entry.hash)) { try store.dictionary(for: entry) }
        #expect(store.entries().isEmpty)
        // Re-register, corrupt again: prepare names nothing rather than a dictionary it cannot use.
        try register(client, url: "https://example.com/a/d", body: bytes("original bytes"), useAsDictionary: #"match="/a/*""#)
        try Data("tampered".utf8).write(to: URL(fileURLWithPath: dir + "/bodies/" + bodies[0]))
        let r = try client.prepare(url: "https://example.com/a/x")
        #expect(r.dictionary == nil)
        #expect(r.fields[.availableDictionary] == nil)
    }

    @Test func malformedIndexStartsEmpty() throws {
        let dir = makeTemporaryDirectory("dclient-tests")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: dir + "/index.json"))
        let store = try ClientDictionaryStore(location: .directory(dir))
        #expect(store.entries().isEmpty)
        let (e, b) = entry("x", size: 10, at: clock.now)
        try store.insert(e, body: b)
        #expect(try ClientDictionaryStore(location: .directory(dir)).entries().count == 1)
    }

    @Test func countLimitEvictsTheLeastRecentlyUsed() throws {
        let store = try ClientDictionaryStore(location: .memory, limits: ClientStoreLimits(maxCount: 3))
        var entries: [StoredDictionary] = []
        for i in 0..<3 {
            let (e, b) = entry("e\(i)", size: 100, at: clock.now + Double(i))
            try store.insert(e, body: b)
            entries.append(e)
        }
        store.touch(entries[0].key, at: clock.now + 10)  // e0 is now the most recently used
        let (e3, b3) = entry("e3", size: 100, at: clock.now + 11)
        let evicted = try store.insert(e3, body: b3)
        #expect(evicted.map(\.match) == ["/e1/*"])
        #expect(Set(store.entries().map(\.match)) == ["/e0/*", "/e2/*", "/e3/*"])
    }

    @Test func partitionShareEvictsOnlyWithinThePartition() throws {
        let store = try ClientDictionaryStore(location: .memory, limits: ClientStoreLimits(byteBudget: 1000, partitionShare: 0.5))
        let (other, ob) = entry("other", partition: "bob", size: 400, at: clock.now)
        try store.insert(other, body: ob)
        for i in 0..<3 {
            let (e, b) = entry("a\(i)", partition: "alice", size: 200, at: clock.now + Double(i + 1))
            try store.insert(e, body: b)
        }
        // alice may hold 500 bytes: her oldest went, bob's dictionary stayed.
        #expect(store.entries(partition: "alice").map(\.match) == ["/a1/*", "/a2/*"])
        #expect(store.entries(partition: "bob").count == 1)
        let (huge, hb) = entry("huge", partition: "alice", size: 501, at: clock.now)
        #expect(throws: DictionaryClientError.self) { try store.insert(huge, body: hb) }
    }

    @Test func totalBudgetEvictsAcrossPartitions() throws {
        let store = try ClientDictionaryStore(location: .memory, limits: ClientStoreLimits(byteBudget: 1000, partitionShare: 0.6))
        let (a, ab) = entry("a", partition: "p1", size: 500, at: clock.now)
        let (b, bb) = entry("b", partition: "p2", size: 500, at: clock.now + 1)
        let (c, cb) = entry("c", partition: "p3", size: 300, at: clock.now + 2)
        try store.insert(a, body: ab)
        try store.insert(b, body: bb)
        let evicted = try store.insert(c, body: cb)
        #expect(evicted.map(\.partition) == ["p1"])
    }

    @Test func partitionsKeepAccountsApart() throws {
        let client = try memoryClient(clock)
        try register(client, url: "https://example.com/cal/alice", body: bytes("alice's calendar"),
                     useAsDictionary: #"match="/cal/*""#, partition: "alice")
        #expect(try client.prepare(url: "https://example.com/cal/x", partition: "alice").dictionary != nil)
        let bob = try client.prepare(url: "https://example.com/cal/x", partition: "bob")
        #expect(bob.dictionary == nil)
        #expect(bob.fields[.availableDictionary] == nil)
        #expect(try client.prepare(url: "https://example.com/cal/x").dictionary == nil)
    }

    @Test func clearRemovesOnePartitionOrAll() throws {
        let dir = makeTemporaryDirectory("dclient-tests")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try ClientDictionaryStore(location: .directory(dir))
        for p in ["a", "b"] {
            let (e, b) = entry("x", partition: p, size: 50, at: clock.now)
            try store.insert(e, body: b)
        }
        try store.clear(partition: "a")
        #expect(store.entries().map(\.partition) == ["b"])
        try store.clear()
        #expect(store.entries().isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/bodies").isEmpty)
        #expect(try ClientDictionaryStore(location: .directory(dir)).entries().isEmpty)
    }
}

@Suite struct LinkTests {
    @Test func parsesCompressionDictionaryLinks() {
        #expect(CompressionDictionaryLink.references(in: [#"</d/news.dict>; rel="compression-dictionary""#]) == ["/d/news.dict"])
        #expect(CompressionDictionaryLink.references(in: [
            #"</style.css>; rel=preload; as=style, <dict.bin>;rel=compression-dictionary, <https://x/y>; title="a,b"; rel="preload compression-dictionary""#,
        ]) == ["dict.bin", "https://x/y"])
        #expect(CompressionDictionaryLink.references(in: ["<a>; rel=preload", "garbage", "<b", ";;;,,,", ""]).isEmpty)
        let many = (0..<40).map { "</d\($0)>; rel=compression-dictionary" }.joined(separator: ", ")
        #expect(CompressionDictionaryLink.references(in: [many]).count == CompressionDictionaryLink.maximumLinks)
    }

    @Test func arbitraryInputNeverTraps() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("<>;=,\" \\/ab-rel=compression-dictionary".utf8)
        for _ in 0..<2000 {
            let count = Int.random(in: 0..<80, using: &generator)
            let text = String(decoding: (0..<count).map { _ in alphabet.randomElement(using: &generator)! }, as: UTF8.self)
            _ = CompressionDictionaryLink.references(in: [text])
        }
    }

    @Test func responseLinksAreResolvedSameOriginOnly() throws {
        let client = try memoryClient(TestClock())
        let request = try client.prepare(url: "https://example.com/app/page")
        let r = try client.process(ClientResponse(status: 200, fields: fields(
            ("link", #"</d/a.dict>; rel="compression-dictionary", <b.dict>; rel="compression-dictionary""#),
            ("link", #"<https://evil.example/x>; rel="compression-dictionary""#)), body: []), for: request)
        #expect(r.dictionaryLinks.map(\.description) == ["https://example.com/d/a.dict", "https://example.com/app/b.dict"])
    }
}
