import DictionaryCodec
import DictionaryTransport
import Foundation
import Testing
import TestSupport

/// The store removes or moves only files it wrote, never follows a symlink, and
/// never reads a file larger than the largest dictionary it accepts.
@Suite struct DictionaryStoreOwnershipTests {
    let directory = makeTemporaryDirectory()
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func cleanup() { try? FileManager.default.removeItem(atPath: directory) }
    func files(_ sub: String = "") -> Set<String> {
        Set((try? FileManager.default.contentsOfDirectory(atPath: directory + sub)) ?? [])
    }
    func write(_ name: String, _ bytes: [UInt8]) {
        _ = FileManager.default.createFile(atPath: directory + "/" + name, contents: Data(bytes))
    }
    /// A record in the store's own format naming `hash` (what `put` writes).
    func record(for hash: DictionaryHash, size: Int) throws -> [UInt8] {
        Array("""
        {"format_version": 1, "hash": "\(hash.hex)", "match": "/*", "path_pattern": "/*", "match_dest": [],
         "rule": "r", "source_path": "/x", "first_served": "2027-01-15T08:00:00Z", "last_served": "2027-01-15T08:00:00Z",
         "max_age": 86400, "expires": "2027-01-16T08:00:00Z", "byte_size": \(size)}
        """.utf8)
    }
    func warnings(_ logs: CapturedLogs) -> Int {
        logs.records.withLock { $0.filter { $0.0 == .warning && $0.1.contains("not written by it") }.count }
    }

    @Test func filesTheStoreDidNotWriteAreLeftAloneAndWarnedAboutOnce() throws {
        defer { cleanup() }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let notes = Array("my notes".utf8)
        let hexNamed = SHA256.hash(Array("someone else's content".utf8))
        let jsonNamed = SHA256.hash(Array("unrelated".utf8))
        write(".tmp-notes.txt", notes)
        write(jsonNamed.hex + ".json", Array(#"{"unrelated": true}"#.utf8))
        write(hexNamed.hex, Array("not the content its name claims".utf8))
        write(referenceHash.hex, referenceDictionary)  // right bytes, but no record of ours
        write("README", notes)
        // Named almost like a partition's record: a short tag, an upper-case tag, two tags.
        write(referenceHash.hex + "." + String(repeating: "a", count: 63) + ".json", notes)
        write(referenceHash.hex + "." + String(repeating: "A", count: 64) + ".json", notes)
        write(referenceHash.hex + ".ab.cd.json", notes)
        let before = files()

        let logs = CapturedLogs()
        let store = try DirectoryDictionaryStore(directory: directory, logger: logs.logger)
        #expect(store.hashes.isEmpty)
        #expect(store.get(referenceHash) == nil)  // never adopted without our record
        #expect(store.get(hexNamed) == nil)
        #expect(files().isSuperset(of: before))
        #expect(!files().contains("quarantine") || files("/quarantine").isEmpty)
        #expect(FileManager.default.contents(atPath: directory + "/.tmp-notes.txt") == Data(notes))
        #expect(warnings(logs) == 8)
        _ = store.get(referenceHash)
        #expect(warnings(logs) == 8)
    }

    @Test func ownStrayFilesAreStillCleanedUp() throws {
        defer { cleanup() }
        do {
            let store = try DirectoryDictionaryStore(directory: directory)
            try store.put(referenceDictionary, description: DictionaryDescription(pattern: try URLPattern("/*", base: nil)), now: t0)
        }
        let orphan = SHA256.hash(Array("orphan".utf8))
        write(orphan.hex + ".json", try record(for: orphan, size: 6))    // our record without bytes
        write(".tmp-" + UUID().uuidString, [1, 2, 3])                     // our crashed write
        let liar = SHA256.hash(Array("the real content".utf8))
        write(liar.hex, Array("other content".utf8))                      // ours (record), bytes wrong
        write(liar.hex + ".json", try record(for: liar, size: 13))
        let store = try DirectoryDictionaryStore(directory: directory)
        #expect(store.hashes == [referenceHash])
        #expect(files() == [referenceHash.hex, referenceHash.hex + ".json", DirectoryDictionaryStore.markerName, "quarantine"])
        #expect(files("/quarantine").contains { $0.hasPrefix(liar.hex + ".") })
    }

    @Test func aSymlinkNamedWithAHashIsNeverAdopted() throws {
        defer { cleanup() }
        let passwd = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "/etc/passwd")))
        let hash = SHA256.hash(passwd)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: directory + "/" + hash.hex, withDestinationPath: "/etc/passwd")
        write(hash.hex + ".json", try record(for: hash, size: passwd.count))
        let logs = CapturedLogs()
        let store = try DirectoryDictionaryStore(directory: directory, logger: logs.logger)
        #expect(store.hashes.isEmpty)
        #expect(store.get(hash) == nil)       // the lookup path (adoption) refuses it too
        let other = try DirectoryDictionaryStore(directory: directory)
        #expect(other.get(hash) == nil)
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + hash.hex)) == "/etc/passwd")
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: "/etc/passwd"))) == passwd)
        // A symlinked record is not ours either.
        try FileManager.default.removeItem(atPath: directory + "/" + hash.hex + ".json")
        write("elsewhere.json", try record(for: referenceHash, size: referenceDictionary.count))
        write(referenceHash.hex, referenceDictionary)
        try FileManager.default.createSymbolicLink(atPath: directory + "/" + referenceHash.hex + ".json", withDestinationPath: directory + "/elsewhere.json")
        #expect(try DirectoryDictionaryStore(directory: directory).hashes.isEmpty)
    }

    @Test func anOversizedFileIsNeverRead() throws {
        defer { cleanup() }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let hash = SHA256.hash(Array("claimed".utf8))
        let path = directory + "/" + hash.hex
        write(hash.hex, [])
        // 2 GB, sparse: reading it whole would allocate 2 GB.
        #expect(truncate(path, 2 << 30) == 0)
        write(hash.hex + ".json", try record(for: hash, size: 7))
        let logs = CapturedLogs()
        let store = try DirectoryDictionaryStore(directory: directory, logger: logs.logger)
        #expect(store.hashes.isEmpty)
        #expect(logs.contains(.error, "not read"))
        #expect(files("/quarantine").contains { $0.hasPrefix(hash.hex + ".") })
    }
}
