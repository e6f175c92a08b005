import DictionaryCodec
import DictionaryTransport
import Foundation
import Logging
import Testing
import TestSupport
import Locking

/// Collects log records so tests can check what the store reported.
final class CapturedLogs: Sendable {
    let records = Locked<[(Logger.Level, String)]>([])
    var logger: Logger {
        Logger(label: "test") { _ in CapturingHandler(sink: self) }
    }
    func contains(_ level: Logger.Level, _ text: String) -> Bool {
        records.withLock { $0.contains { $0.0 == level && $0.1.contains(text) } }
    }
}

struct CapturingHandler: LogHandler {
    let sink: CapturedLogs
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        // The message and its metadata values, so tests can look for a logged reason.
        let text = "\(event.message) " + (event.metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.value)" }.joined(separator: " ")
        sink.records.withLock { $0.append((event.level, text)) }
    }
}

@Suite struct DirectoryDictionaryStoreTests {
    let directory = makeTemporaryDirectory()
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func description(_ match: String = "/static/app.*.js", rule: String? = "app", maxAge: Int? = 86_400) -> DictionaryDescription {
        DictionaryDescription(pattern: try! URLPattern(match, base: nil), matchDestinations: ["script"], id: DictionaryID("v1"),
                              rule: rule, sourcePath: "/static/app.v1.js", maxAge: maxAge)
    }

    /// The directory's files except the store's marker.
    func files() -> Set<String> {
        Set((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).subtracting([DirectoryDictionaryStore.markerName])
    }

    func cleanup() { try? FileManager.default.removeItem(atPath: directory) }

    @Test func putStoresContentAddressedFilesWithAMetadataRecord() throws {
        defer { cleanup() }
        let store = try DirectoryDictionaryStore(directory: directory)
        let hash = try store.put(referenceDictionary, description: description(), now: t0)
        #expect(hash == referenceHash)
        #expect(files() == [referenceHash.hex, referenceHash.hex + ".json"])
        let json = try #require(FileManager.default.contents(atPath: directory + "/" + referenceHash.hex + ".json"))
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        #expect(object["format_version"] as? Int == 1)
        #expect(object["match"] as? String == "/static/app.*.js")
        #expect(object["match_dest"] as? [String] == ["script"])
        #expect(object["id"] as? String == "v1")
        #expect(object["byte_size"] as? Int == referenceDictionary.count)
        #expect(object["source_path"] as? String == "/static/app.v1.js")
        let loaded = try #require(store.get(referenceHash))
        #expect(loaded.bytes == referenceDictionary)
        #expect(loaded.covers(path: "/static/app.v2.js"))
        #expect(!loaded.covers(path: "/other.js"))
        #expect(loaded.metadata.expires == t0.addingTimeInterval(86_400))
        #expect(loaded.metadata.candidate(hash: referenceHash)?.pattern.matches(path: "/static/app.v9.js") == true)
        let candidate = try #require(store.candidate(for: referenceHash))
        #expect(candidate.matchDestinations == ["script"])
        #expect(candidate.pattern.source == "/static/app.*.js")
        #expect(store.candidate(for: DictionaryHash(bytes: [UInt8](repeating: 0, count: 32))!) == nil)
    }

    @Test func instancesSharingADirectorySeeEachOthersDictionaries() throws {
        defer { cleanup() }
        let a = try DirectoryDictionaryStore(directory: directory)
        let b = try DirectoryDictionaryStore(directory: directory)
        #expect(b.get(referenceHash) == nil)
        try a.put(referenceDictionary, description: description(), now: t0)
        let adopted = try #require(b.get(referenceHash))
        #expect(adopted.bytes == referenceDictionary)
        #expect(adopted.metadata.match == "/static/app.*.js")
        #expect(b.metadata(referenceHash) != nil)
        // a corrupted file written behind b's back is verified, quarantined, never returned
        let c = try DirectoryDictionaryStore(directory: directory + "-c")
        defer { try? FileManager.default.removeItem(atPath: directory + "-c") }
        try a.put(referenceDictionary, description: description(), now: t0)
        try FileManager.default.copyItem(atPath: directory + "/" + referenceHash.hex + ".json",
                                         toPath: directory + "-c/" + referenceHash.hex + ".json")
        try Data("tampered".utf8).write(to: URL(fileURLWithPath: directory + "-c/" + referenceHash.hex))
        #expect(c.get(referenceHash) == nil)
        #expect(!FileManager.default.fileExists(atPath: directory + "-c/" + referenceHash.hex))
        let quarantined = (try? FileManager.default.contentsOfDirectory(atPath: directory + "-c/quarantine")) ?? []
        #expect(quarantined.contains { $0.hasPrefix(referenceHash.hex + ".") && !$0.contains(".json") })
    }

    @Test func putIsIdempotent() throws {
        defer { cleanup() }
        let store = try DirectoryDictionaryStore(directory: directory)
        try store.put(referenceDictionary, description: description(), now: t0)
        try store.put(referenceDictionary, description: description(), now: t0.addingTimeInterval(60))
        #expect(files().count == 2)
        #expect(store.hashes == [referenceHash])
        let record = try #require(store.metadata(referenceHash))
        #expect(record.firstServed == t0)
        #expect(record.lastServed == t0.addingTimeInterval(60))
    }

    @Test func aFailedPutThrowsAClearErrorAndLeavesNoPartialFiles() throws {
        defer { cleanup() }
        let store = try DirectoryDictionaryStore(directory: directory)
        // A directory where the record should go makes the final rename fail.
        try FileManager.default.createDirectory(atPath: directory + "/" + referenceHash.hex + ".json", withIntermediateDirectories: false)
        #expect {
            try store.put(referenceDictionary, description: description(), now: t0)
        } throws: { error in
            (error as? DictionaryStoreError)?.description.contains("cannot rename") == true
        }
        #expect(files() == [referenceHash.hex + ".json"])
        #expect(store.get(referenceHash) == nil)
        #expect(store.hashes.isEmpty)
    }

    @Test func corruptedFileIsQuarantinedAndNeverReturned() throws {
        defer { cleanup() }
        let logs = CapturedLogs()
        do {
            let writer = try DirectoryDictionaryStore(directory: directory)
            try writer.put(referenceDictionary, description: description(), now: t0)
        }
        let store = try DirectoryDictionaryStore(directory: directory, logger: logs.logger)
        // Corrupt after the index was built (the start-up scan would catch it too).
        var bytes = referenceDictionary
        bytes[0] ^= 0xFF
        try Data(bytes).write(to: URL(fileURLWithPath: directory + "/" + referenceHash.hex))
        #expect(store.get(referenceHash) == nil)
        #expect(store.get(referenceHash) == nil)
        #expect(store.hashes.isEmpty)
        #expect(!files().contains(referenceHash.hex))
        let quarantined = try FileManager.default.contentsOfDirectory(atPath: directory + "/quarantine")
        #expect(quarantined.contains { $0.hasPrefix(referenceHash.hex + ".") })
        #expect(quarantined.contains { $0.hasPrefix(referenceHash.hex + ".json.") })
        #expect(logs.contains(.error, "quarantined"))
    }

    @Test func restartRebuildsTheIndexAndCleansUp() throws {
        defer { cleanup() }
        let payloads = (0..<3).map { i in Array("dictionary number \(i) ".utf8) + [UInt8](repeating: UInt8(i), count: 100) }
        var hashes: [DictionaryHash] = []
        do {
            let store = try DirectoryDictionaryStore(directory: directory)
            for p in payloads { hashes.append(try store.put(p, description: description(), now: t0)) }
            store.recordServed(hashes[1], at: t0.addingTimeInterval(500))
            try store.flush()
        }
        // Debris a crash could leave (our temporary file, our record without bytes), and one of our
        // dictionaries whose bytes no longer match its name.
        let crashed = ".tmp-" + UUID().uuidString
        _ = FileManager.default.createFile(atPath: directory + "/" + crashed, contents: Data([1, 2, 3]))
        let orphanBytes = Array("orphan".utf8)
        let orphan = try DirectoryDictionaryStore(directory: directory + "-o").put(orphanBytes, description: description(), now: t0)
        try FileManager.default.moveItem(atPath: directory + "-o/" + orphan.hex + ".json", toPath: directory + "/" + orphan.hex + ".json")
        try? FileManager.default.removeItem(atPath: directory + "-o")
        let liar = hashes[2]
        _ = FileManager.default.createFile(atPath: directory + "/" + liar.hex, contents: Data("other content".utf8))

        let logs = CapturedLogs()
        let reopened = try DirectoryDictionaryStore(directory: directory, logger: logs.logger)
        #expect(Set(reopened.hashes) == Set(hashes.prefix(2)))
        #expect(reopened.metadata(hashes[1])?.lastServed == t0.addingTimeInterval(500))
        for (hash, payload) in zip(hashes, payloads).prefix(2) { #expect(reopened.get(hash)?.bytes == payload) }
        #expect(reopened.get(liar) == nil)
        #expect(!files().contains(crashed))
        #expect(!files().contains(orphan.hex + ".json"))
        #expect(!files().contains(liar.hex))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory + "/quarantine").contains { $0.hasPrefix(liar.hex) })
        #expect(logs.contains(.error, "quarantined"))
    }

    @Test func dataWithoutARecordIsNeverUsedAndLeftAlone() throws {
        defer { cleanup() }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: directory + "/" + referenceHash.hex, contents: Data(referenceDictionary))
        let store = try DirectoryDictionaryStore(directory: directory)
        #expect(store.hashes.isEmpty)
        #expect(store.get(referenceHash) == nil)
        #expect(files() == [referenceHash.hex])
    }

    @Test func retentionByTotalBytesRemovesTheLeastRecentlyServed() throws {
        defer { cleanup() }
        let store = try DirectoryDictionaryStore(directory: directory, retention: DictionaryRetention(maxTotalBytes: 250))
        var hashes: [DictionaryHash] = []
        for i in 0..<3 {
            hashes.append(try store.put([UInt8](repeating: UInt8(i), count: 100), description: description(), now: t0.addingTimeInterval(Double(i))))
        }
        store.recordServed(hashes[0], at: t0.addingTimeInterval(10))  // now the most recent
        let removed = store.prune(now: t0.addingTimeInterval(20))
        #expect(removed == [DictionaryRemoval(hash: hashes[1], reason: .totalBytes)])
        #expect(Set(store.hashes) == [hashes[0], hashes[2]])
        #expect(!files().contains(hashes[1].hex))
        #expect(!files().contains(hashes[1].hex + ".json"))
        #expect(store.totalByteCount == 200)
    }

    @Test func retentionByCountPerRule() throws {
        defer { cleanup() }
        let store = try DirectoryDictionaryStore(directory: directory, retention: DictionaryRetention(maxCountPerRule: 2))
        var a: [DictionaryHash] = []
        for i in 0..<3 {
            a.append(try store.put(Array("a\(i)".utf8), description: description(rule: "a", maxAge: 5), now: t0.addingTimeInterval(Double(i))))
        }
        let b = try store.put(Array("b".utf8), description: description(rule: "b", maxAge: 5), now: t0)
        // While fresh, the cap removes nothing: clients may still name them.
        #expect(store.prune(now: t0.addingTimeInterval(4)).isEmpty)
        let removed = store.prune(now: t0.addingTimeInterval(10))
        #expect(removed == [DictionaryRemoval(hash: a[0], reason: .ruleCount)])
        #expect(Set(store.hashes) == [a[1], a[2], b])
    }

    @Test func retentionByAgePastExpiry() throws {
        defer { cleanup() }
        let store = try DirectoryDictionaryStore(directory: directory, retention: DictionaryRetention(keepPastExpiry: 60))
        let old = try store.put(Array("old".utf8), description: description(maxAge: 10), now: t0)
        let served = try store.put(Array("served".utf8), description: description(maxAge: 10), now: t0)
        let forever = try store.put(Array("no max-age".utf8), description: description(maxAge: nil), now: t0)
        store.recordServed(served, at: t0.addingTimeInterval(50))  // expiry moves to t0+60
        #expect(store.prune(now: t0.addingTimeInterval(69)).isEmpty)
        #expect(store.prune(now: t0.addingTimeInterval(71)) == [DictionaryRemoval(hash: old, reason: .expired)])
        #expect(Set(store.hashes) == [served, forever])
        #expect(store.prune(now: t0.addingTimeInterval(1_000)) == [DictionaryRemoval(hash: served, reason: .expired)])
    }

    @Test func recordServedMovesTheRecordInWholeSecondsAndKnowsOnlyStoredHashes() throws {
        defer { cleanup() }
        let store = try DirectoryDictionaryStore(directory: directory)
        let hash = try store.put(Array("recency".utf8), description: description(maxAge: 10), now: t0)
        #expect(store.recordServed(hash, at: t0.addingTimeInterval(0.5)))  // held, unchanged (< 1 s)
        #expect(store.metadata(hash)?.lastServed == t0 && store.metadata(hash)?.expires == t0.addingTimeInterval(10))
        #expect(store.recordServed(hash, at: t0.addingTimeInterval(2)))
        #expect(store.metadata(hash)?.lastServed == t0.addingTimeInterval(2))
        #expect(store.metadata(hash)?.expires == t0.addingTimeInterval(12))
        #expect(store.recordServed(hash, at: t0))  // never backwards
        #expect(store.metadata(hash)?.lastServed == t0.addingTimeInterval(2))
        #expect(!store.recordServed(SHA256.hash(Array("never stored".utf8)), at: t0))
        // Persisted by flush: a new instance reads the moved record.
        try store.flush()
        let reopened = try DirectoryDictionaryStore(directory: directory)
        #expect(reopened.metadata(hash)?.lastServed == t0.addingTimeInterval(2))
    }

    @Test func memoryCacheStaysWithinBudget() throws {
        defer { cleanup() }
        let store = try DirectoryDictionaryStore(directory: directory, cacheBudget: 250)
        var hashes: [DictionaryHash] = []
        for i in 0..<5 { hashes.append(try store.put([UInt8](repeating: UInt8(i), count: 100), description: description(), now: t0)) }
        #expect(store.cachedByteCount <= 250)
        for h in hashes { #expect(store.get(h)?.bytes.count == 100) }
        #expect(store.cachedByteCount <= 250)
    }

    @Test func concurrentPutAndGetFromManyTasks() async throws {
        defer { cleanup() }
        let store = try DirectoryDictionaryStore(directory: directory, cacheBudget: 2_000)
        let payloads = (0..<40).map { i in [UInt8](repeating: UInt8(i), count: 64 + i) }
        let start = t0
        let shared = description()
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<16 {
                group.addTask {
                    for round in 0..<10 {
                        let payload = payloads[(task * 7 + round) % payloads.count]
                        let hash = try! store.put(payload, description: shared, now: start.addingTimeInterval(Double(round)))
                        #expect(store.get(hash)?.bytes == payload)
                        store.recordServed(hash, at: start.addingTimeInterval(Double(round + 1)))
                    }
                }
            }
        }
        try store.flush()
        let expected = Set((0..<16).flatMap { task in (0..<10).map { round in SHA256.hash(payloads[(task * 7 + round) % payloads.count]) } })
        #expect(Set(store.hashes) == expected)
        #expect(!files().contains { $0.hasPrefix(".tmp-") })
        let reopened = try DirectoryDictionaryStore(directory: directory)
        #expect(Set(reopened.hashes) == expected)
        for hash in expected { #expect(reopened.get(hash) != nil) }
    }
}
