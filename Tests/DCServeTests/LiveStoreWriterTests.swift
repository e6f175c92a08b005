@testable import DCServe
import DictionaryCodec
import DictionaryTransport
import Foundation
import Testing
import Locking

/// The background writer of live versions: batches wait `batchDelay`, versions replaced meanwhile are
/// never written, `drain` writes at once. Against a real directory store.
@Suite struct LiveStoreWriterTests {
    let directory = NSTemporaryDirectory() + "dcserve-live-writer-tests-" + UUID().uuidString
    /// What the live index retains, and what the writer reported committed.
    final class Versions: Sendable {
        let retained = Locked(Set<DictionaryHash>())
        let committed = Locked<[DictionaryHash]>([])
    }
    let versions = Versions()

    func makeWriter(delay: Duration, maxPendingBytes: Int = 64 << 20) throws -> (LiveStoreWriter, DirectoryDictionaryStore) {
        let store = try DirectoryDictionaryStore(directory: directory, retention: DictionaryRetention())
        let versions = self.versions
        return (LiveStoreWriter(store: store, maxPendingBytes: maxPendingBytes, batchDelay: delay, onCommitted: { writes in
            versions.committed.withLock { $0 += writes.map(\.hash) }
        }), store)
    }

    /// Submits a new version (retained until the test says it was replaced); `outcome` gets the refusal.
    @discardableResult
    func submit(_ text: String, to writer: LiveStoreWriter, reservation: LiveStoreWriter.Reservation? = nil,
                outcome: UnsafeMutablePointer<LiveStoreWriter.Outcome?>? = nil) -> DictionaryHash {
        let bytes = Array(text.utf8), hash = SHA256.hash(bytes)
        versions.retained.withLock { _ = $0.insert(hash) }
        let description = DictionaryDescription(pattern: try! URLPattern("/feed/*", base: nil), matchDestinations: [], id: nil,
                                                rule: "feed", sourcePath: "/feed/a", maxAge: 60, partition: nil)
        let versions = self.versions
        let refused = writer.submit(.init(partition: nil, hash: hash),
                                    write: DictionaryStoreWrite(bytes: bytes, hash: hash, description: description, now: Date()),
                                    reservation: reservation, stillRetained: { versions.retained.withLock { $0.contains(hash) } })
        outcome?.pointee = refused
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

    /// A version advertised after its room was reserved is queued even when other versions filled the
    /// queue in between (the check and the submit were two steps before: such a version was advertised
    /// and never stored); without room, no reservation, and unreserved versions are refused as overloaded.
    @Test func aReservedVersionIsNeverRefusedAsOverloaded() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (writer, store) = try makeWriter(delay: .seconds(60), maxPendingBytes: 100)
        let body = String(repeating: "a", count: 59)
        guard let reserved = writer.reserve(bytes: 60) else { Issue.record("an empty queue has room"); return }
        #expect(writer.reserve(bytes: 60) == nil, "60 reserved + 60 > 100")
        var outcome: LiveStoreWriter.Outcome?
        submit(body + "x", to: writer, outcome: &outcome)  // unreserved: over the bound
        #expect(outcome == .overloaded)
        let kept = submit(body + "y", to: writer, reservation: reserved, outcome: &outcome)
        #expect(outcome == nil)
        // A cancelled reservation gives its room back.
        writer.drain()
        guard let other = writer.reserve(bytes: 60) else { Issue.record("room after the drain"); return }
        writer.cancel(other)
        #expect(writer.reserve(bytes: 90).map { writer.cancel($0); return true } == true)
        #expect(store.get(kept, partition: nil)?.bytes == Array((body + "y").utf8))
    }
}
