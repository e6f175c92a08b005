import DictionaryCodec
import DictionaryTransport
import Dispatch
import Foundation
import Locking

/// A real store (``DirectoryDictionaryStore`` on disk) whose `put` waits until the test calls
/// ``open()``: what a test needs to observe the moment before a background store write completes.
/// Every other call goes straight to the directory store. Once opened, it stays open.
///
/// Thread-safe. A test that closes the gate must open it before it ends (`defer { store.open() }`),
/// so that no writer stays blocked.
final class GatedDictionaryStore: DictionaryStore {
    let base: DirectoryDictionaryStore
    private let gate = DispatchSemaphore(value: 0)
    private let waiting = Locked(0)

    init(_ base: DirectoryDictionaryStore) { self.base = base }

    /// Lets every waiting and later `put` through.
    func open() { gate.signal() }

    /// `put` calls waiting at the gate now.
    var waitingPuts: Int { waiting.withLock { $0 } }

    /// Whether `count` `put` calls are waiting at the gate within `seconds` (a writer on another
    /// queue may not have reached it yet).
    func awaitWaitingPuts(_ count: Int, seconds: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while waitingPuts != count {
            if Date() > deadline { return false }
            usleep(1000)
        }
        return true
    }

    @discardableResult
    func put(_ bytes: [UInt8], description: DictionaryDescription, now: Date) throws -> DictionaryHash {
        waiting.withLock { $0 += 1 }
        gate.wait()
        gate.signal()  // stays open for the next writer
        waiting.withLock { $0 -= 1 }
        return try base.put(bytes, description: description, now: now)
    }

    func flush() throws { try base.flush() }
    @discardableResult
    func prune(now: Date) -> [DictionaryRemoval] { base.prune(now: now) }
    var hashes: [DictionaryHash] { base.hashes }
    func get(_ hash: DictionaryHash, partition: String?) -> StoredDictionary? { base.get(hash, partition: partition) }
    func metadata(_ hash: DictionaryHash, partition: String?) -> DictionaryMetadata? { base.metadata(hash, partition: partition) }
    @discardableResult
    func recordServed(_ hash: DictionaryHash, partition: String?, at date: Date) -> Bool {
        base.recordServed(hash, partition: partition, at: date)
    }
    var records: [DictionaryMetadata] { base.records }
}
