import DictionaryCodec
import Foundation

/// Where dcserve keeps every dictionary it handed out, addressed by SHA-256.
///
/// Implementations must be thread-safe (called from every request) and must never return bytes whose
/// SHA-256 differs from the requested hash. ``DirectoryDictionaryStore`` is the local implementation;
/// a shared store (object storage, a database) can conform later.
public protocol DictionaryStore: Sendable {
    /// Stores `bytes` with `description`, idempotently: storing the same bytes again keeps one copy and
    /// refreshes the record (last served, expiry, source, rule). Returns the bytes' hash.
    @discardableResult
    func put(_ bytes: [UInt8], description: DictionaryDescription, now: Date) throws -> DictionaryHash

    /// Stores every write of `batch` as ``put(_:description:now:)`` does, as one unit where the store
    /// can (one transaction, one durable sync): when it throws, none of them may be stored. The
    /// default stores them one by one.
    func put(batch: [DictionaryStoreWrite]) throws

    /// Persists pending record updates.
    func flush() throws

    /// Applies the retention limits at `now`, removing dictionaries; returns what was removed.
    @discardableResult
    func prune(now: Date) -> [DictionaryRemoval]

    /// Every stored hash.
    var hashes: [DictionaryHash] { get }

    /// How many distinct dictionaries (hashes) are stored (for metrics; the default counts `hashes`).
    var dictionaryCount: Int { get }

    /// Returns caches the store holds to the allocator (after traffic stops); the default does nothing.
    func releaseMemory()

    /// Bytes of memory the store's caches hold now; nil when it does not know (the default).
    var cacheBytes: Int? { get }

    /// Removes the records of (`partition`, `hash`) (live versions no client may name any more) and
    /// bytes no record uses any more; pairs it does not hold are skipped. Returns how many it removed.
    /// The default removes nothing (the store's retention removes them later).
    @discardableResult
    func remove(_ records: [(hash: DictionaryHash, partition: String?)]) -> Int

    // Partitions. A dictionary of a private rule belongs to one partition
    // (``DictionaryMetadata/partition``) and is found by (partition, hash) only: the hash-only methods
    // above answer for shared dictionaries (partition nil) alone, never for a partitioned one.

    /// The verified dictionary stored under (`partition`, `hash`); nil when unknown, missing, corrupted,
    /// or stored only under another partition (or none). `partition` nil = shared.
    func get(_ hash: DictionaryHash, partition: String?) -> StoredDictionary?

    /// The record of (`partition`, `hash`) without loading the bytes.
    func metadata(_ hash: DictionaryHash, partition: String?) -> DictionaryMetadata?

    /// ``recordServed(_:at:)`` for (`partition`, `hash`); false when the store does not hold that pair.
    @discardableResult
    func recordServed(_ hash: DictionaryHash, partition: String?, at date: Date) -> Bool

    /// Every record, of every partition (start-up rebuild of indexes; not for request paths).
    var records: [DictionaryMetadata] { get }

    /// The history windows this store shares between the instances using it; nil (the default) when
    /// it serves one process, whose history builder then keeps its windows in memory.
    var historyWindows: (any HistoryWindowStore)? { get }
}

extension DictionaryStore {
    public var dictionaryCount: Int { hashes.count }
    public func releaseMemory() {}
    public var historyWindows: (any HistoryWindowStore)? { nil }
    public var cacheBytes: Int? { nil }
    @discardableResult
    public func remove(_ records: [(hash: DictionaryHash, partition: String?)]) -> Int { 0 }

    public func put(batch: [DictionaryStoreWrite]) throws {
        for write in batch { try put(write.bytes, description: write.description, now: write.now) }
    }
}

/// One dictionary to store in a ``DictionaryStore/put(batch:)``: its bytes, their SHA-256 as the caller
/// computed it (a store may trust it on write: every load re-verifies the bytes), and its description.
public struct DictionaryStoreWrite: Sendable {
    public var bytes: [UInt8]
    public var hash: DictionaryHash
    public var description: DictionaryDescription
    public var now: Date

    public init(bytes: [UInt8], hash: DictionaryHash, description: DictionaryDescription, now: Date) {
        self.bytes = bytes
        self.hash = hash
        self.description = description
        self.now = now
    }
}

extension DictionaryStore {
    /// The verified shared dictionary for `hash`, or nil when unknown, missing, corrupted or partitioned.
    public func get(_ hash: DictionaryHash) -> StoredDictionary? { get(hash, partition: nil) }
    /// The record of the shared dictionary `hash` without loading the bytes.
    public func metadata(_ hash: DictionaryHash) -> DictionaryMetadata? { metadata(hash, partition: nil) }
    /// Notes that the shared dictionary was advertised or used at `date` (cheap; persisted by ``flush()``;
    /// `lastServed` moves in steps of at least a second).
    /// False when the store does not hold `hash` (never stored, or removed by retention since).
    @discardableResult
    public func recordServed(_ hash: DictionaryHash, at date: Date) -> Bool { recordServed(hash, partition: nil, at: date) }
}

extension DictionaryStore {
    /// What ``Negotiation/decide(request:path:response:bodySize:policy:knownSizes:lookup:)`` needs about
    /// `hash` (its pattern and `match-dest`), without loading the bytes; nil when unknown. Pass
    /// `store.candidate(for:)` as the `lookup`.
    public func candidate(for hash: DictionaryHash) -> DictionaryCandidate? {
        metadata(hash)?.candidate(hash: hash)
    }
}

/// One dictionary removed by retention, and why.
public struct DictionaryRemoval: Hashable, Sendable {
    public enum Reason: String, Hashable, Sendable {
        case expired, ruleCount, totalBytes
    }

    public let hash: DictionaryHash
    public let reason: Reason
    /// The partition the removed dictionary belonged to (nil = shared).
    public let partition: String?

    public init(hash: DictionaryHash, reason: Reason, partition: String? = nil) {
        self.hash = hash
        self.reason = reason
        self.partition = partition
    }
}

/// Retention limits for a dictionary store. nil disables a limit.
public struct DictionaryRetention: Hashable, Sendable {
    /// Upper bound on the sum of stored dictionary sizes; expired dictionaries go first, then the least
    /// recently served.
    public var maxTotalBytes: Int?
    /// Upper bound on dictionaries per rule (by `rule` in the record), applied to **expired** ones only
    /// (those kept for `keepPastExpiry`): the least recently served expired ones go first. Fresh
    /// dictionaries, which clients may still name, are never removed by this cap, only by `maxTotalBytes`.
    public var maxCountPerRule: Int?
    /// How long a dictionary is kept after its `expires` (clients may hold copies slightly longer).
    /// nil: expiry never removes.
    public var keepPastExpiry: TimeInterval?

    public init(maxTotalBytes: Int? = nil, maxCountPerRule: Int? = nil, keepPastExpiry: TimeInterval? = nil) {
        self.maxTotalBytes = maxTotalBytes
        self.maxCountPerRule = maxCountPerRule
        self.keepPastExpiry = keepPastExpiry
    }
}

/// Errors from storing dictionaries, with the path and the OS reason.
public struct DictionaryStoreError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
