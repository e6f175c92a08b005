@testable import DCServe
import DictionaryCodec
import DictionaryTransport
import Foundation
import Synchronization
import Testing

/// The background writer of live versions: batches wait `batchDelay`, versions replaced meanwhile are
/// never written, `drain` writes at once. Against a real directory store.
@Suite struct LiveStoreWriterTests {
    let directory = NSTemporaryDirectory() + "dcserve-live-writer-tests-" + UUID().uuidString
    /// What the live index retains, and what the writer reported committed.
    final class Versions: Sendable {
        let retained = Mutex(Set<DictionaryHash>())
        let committed = Mutex<[DictionaryHash]>([])
    }
    let versions = Versions()

    func makeWriter(delay: Duration) throws -> (LiveStoreWriter, DirectoryDictionaryStore) {
        let store = try DirectoryDictionaryStore(directory: directory, retention: DictionaryRetention())
        let versions = self.versions
        return (LiveStoreWriter(store: store, batchDelay: delay, onCommitted: { writes in
            versions.committed.withLock { $0 += writes.map(\.hash) }
        }), store)
    }

    /// Submits a new version (retained until the test says it was replaced).
    func submit(_ text: String, to writer: LiveStoreWriter) -> DictionaryHash {
        let bytes = Array(text.utf8), hash = SHA256.hash(bytes)
        versions.retained.withLock { _ = $0.insert(hash) }
        let description = DictionaryDescription(pattern: try! URLPattern("/feed/*", base: nil), matchDestinations: [], id: nil,
                                                rule: "feed", sourcePath: "/feed/a", maxAge: 60, partition: nil)
        let versions = self.versions
        writer.submit(.init(partition: nil, hash: hash), write: DictionaryStoreWrite(bytes: bytes, hash: hash, description: description, now: Date()),
                      stillRetained: { versions.retained.withLock { $0.contains(hash) } })
        return hash
    }

    @Test func aVersionReplacedBeforeItsBatchIsNeverWrittenAndDrainWritesAtOnce() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (writer, store) = try makeWriter(delay: .seconds(60))
        let v1 = submit("version 1 of the feed", to: writer)
        let v2 = submit("version 2 of the feed", to: writer)
        versions.retained.withLock { _ = $0.remove(v1) }  // superseded while its batch waits
        usleep(100_000)
        #expect(versions.committed.withLock { $0 }.isEmpty, "the batch waits for its delay")
        writer.drain()
        #expect(versions.committed.withLock { $0 } == [v2])
        #expect(store.get(v2, partition: nil)?.bytes == Array("version 2 of the feed".utf8))
        #expect(store.get(v1, partition: nil) == nil)
    }

    @Test func aBatchCommitsAfterItsDelayAndTheNextOneToo() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (writer, store) = try makeWriter(delay: .milliseconds(20))
        for round in 0..<2 {
            let hash = submit("version \(round)", to: writer)
            for _ in 0..<500 where !versions.committed.withLock({ $0.contains(hash) }) { usleep(10_000) }  // at most 5 s
            #expect(versions.committed.withLock { $0.contains(hash) })
            #expect(store.get(hash, partition: nil) != nil)
        }
    }
}
