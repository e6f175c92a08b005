import DictionaryCodec
import DictionaryTransport
import Foundation
import Testing
import TestSupport

/// Retention keeps the dictionaries clients were told to keep. Stores of thousands of
/// dictionaries are laid out on disk directly (what `put` would leave, without 10,000 fsyncs), then
/// opened and pruned.
@Suite struct DictionaryRetentionTests {
    let directory = makeTemporaryDirectory()
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func cleanup() { try? FileManager.default.removeItem(atPath: directory) }

    /// Writes dictionary `i` (100 bytes) of `rule`, last served at `lastServed`, fresh for `maxAge` s.
    @discardableResult
    func lay(_ i: Int, rule: String = "pages", lastServed: Date, maxAge: Int) -> DictionaryHash {
        var bytes = Array(String(format: "dictionary %08d ", i).utf8)
        bytes += [UInt8](repeating: UInt8(i % 251), count: 100 - bytes.count)
        let hash = SHA256.hash(bytes)
        let f = ISO8601DateFormatter()
        let record = """
        {"format_version": 1, "hash": "\(hash.hex)", "match": "/p/*", "path_pattern": "/p/*", "match_dest": [],
         "rule": "\(rule)", "source_path": "/p/\(i)", "first_served": "\(f.string(from: lastServed))",
         "last_served": "\(f.string(from: lastServed))", "max_age": \(maxAge),
         "expires": "\(f.string(from: lastServed.addingTimeInterval(TimeInterval(maxAge))))", "byte_size": 100}
        """
        try! Data(record.utf8).write(to: URL(fileURLWithPath: directory + "/" + hash.hex + ".json"))
        try! Data(bytes).write(to: URL(fileURLWithPath: directory + "/" + hash.hex))
        return hash
    }

    func removalLogs(_ logs: CapturedLogs) -> [String] {
        logs.records.withLock { $0.filter { $0.1.contains("removed by retention") }.map(\.1) }
    }

    @Test func theCountCapNeverRemovesFreshDictionaries() throws {
        defer { cleanup() }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let fresh = (0..<2_000).map { lay($0, lastServed: t0.addingTimeInterval(Double($0 % 60)), maxAge: 86_400) }
        let logs = CapturedLogs()
        let store = try DirectoryDictionaryStore(
            directory: directory, retention: DictionaryRetention(maxTotalBytes: 256 << 20, maxCountPerRule: 64, keepPastExpiry: 30 * 86_400),
            logger: logs.logger)
        #expect(store.hashes.count == 2_000)
        #expect(store.prune(now: t0.addingTimeInterval(60)).isEmpty)
        #expect(Set(store.hashes) == Set(fresh))
        #expect(removalLogs(logs).isEmpty)
    }

    @Test func expiredDictionariesGoFirstUnderTheCountCapAndTheByteBudget() throws {
        defer { cleanup() }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // 1,000 fresh dictionaries served between t0 and t0+999; 1,000 expired ones served later (t0+1000…).
        let fresh = (0..<1_000).map { lay($0, lastServed: t0.addingTimeInterval(Double($0)), maxAge: 86_400) }
        let expired = (1_000..<2_000).map { lay($0, lastServed: t0.addingTimeInterval(Double($0)), maxAge: 10) }
        let now = t0.addingTimeInterval(4_000)

        // Byte budget alone (room for 1,500): the 500 least recently served *expired* ones go, no fresh one.
        let logs = CapturedLogs()
        let store = try DirectoryDictionaryStore(
            directory: directory, retention: DictionaryRetention(maxTotalBytes: 1_500 * 100, keepPastExpiry: 30 * 86_400),
            logger: logs.logger)
        let removed = store.prune(now: now)
        #expect(removed.count == 500)
        #expect(Set(removed.map(\.hash)) == Set(expired.prefix(500)))
        #expect(removed.allSatisfy { $0.reason == .totalBytes })
        #expect(Set(fresh).isSubset(of: Set(store.hashes)))
        // Each removal logged once.
        let lines = removalLogs(logs)
        #expect(lines.count == 500)
        #expect(Set(removed.map(\.hash.hex)).allSatisfy { hex in lines.filter { $0.contains(hex) }.count == 1 })

        // Count cap 64 plus a budget for 500: the cap takes the remaining expired ones only, then
        // the budget takes the 500 least recently served fresh ones.
        let capped = try DirectoryDictionaryStore(
            directory: directory, retention: DictionaryRetention(maxTotalBytes: 500 * 100, maxCountPerRule: 64, keepPastExpiry: 30 * 86_400))
        let second = capped.prune(now: now)
        #expect(Set(second.filter { $0.reason == .ruleCount }.map(\.hash)) == Set(expired.suffix(500)))
        #expect(Set(second.filter { $0.reason == .totalBytes }.map(\.hash)) == Set(fresh.prefix(500)))
        #expect(Set(capped.hashes) == Set(fresh.suffix(500)))
    }
}
