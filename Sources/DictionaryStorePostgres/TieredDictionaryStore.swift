import CoreMetrics
import DictionaryCodec
import DictionaryTransport
import Dispatch
import Foundation
import Logging
import Locking

/// A ``DictionaryStore`` made of a shared store (PostgreSQL, the source of truth for which
/// dictionaries exist and their records) and a bounded local cache of bytes (a
/// ``DirectoryDictionaryStore`` whose retention is its byte budget).
///
/// - `put` stores in the shared tier first and throws if that fails (the caller must not advertise
///   the dictionary), then in the local cache (a local failure is only logged).
/// - Partitions: the shared tier alone decides which (partition, hash) pairs exist; the local cache is
///   only a cache of verified bytes by hash (whatever partition its own record names).
/// - `get` answers only for (partition, hash) pairs the shared tier knows; it tries the local cache (which re-verifies
///   SHA-256 on every disk read), then reads the shared tier once (verified there) and keeps the bytes
///   locally (written in the background). Concurrent `get`s of the same missing hash share one
///   database read.
/// - While the shared tier is unreachable, its in-memory records still answer: dictionaries cached
///   locally keep serving deltas, the others are not found (plain codings), `put` fails.
/// - `recordServed` touches the shared tier only; `flush` and `prune` copy that recency into the local
///   cache's records.
/// - `prune` applies retention in the shared tier (one instance at a time) and trims the local cache
///   to its budget; dictionaries removed by any instance stop being returned at once here.
///
/// Thread-safety: as its tiers (both thread-safe); the single-flight table is behind a `Locked`.
public final class TieredDictionaryStore: DictionaryStore {
    public let local: DirectoryDictionaryStore
    public let shared: PostgresDictionaryStore
    private let logger: Logger
    private let flights = Locked<[PostgresDictionaryStore.RowKey: Flight]>([:])
    /// Writes the local copies of dictionaries read from the shared tier, one at a time.
    private let cacheWriter = DispatchQueue(label: "dcserve.tiered-store.cache-writer", qos: .utility)
    private let localHits = Counter(label: "dcserve_store_tier_loads_total", dimensions: [("tier", "local")])
    private let sharedLoads = Counter(label: "dcserve_store_tier_loads_total", dimensions: [("tier", "postgres")])

    /// One database read that concurrent callers wait for.
    private final class Flight: Sendable {
        let done = DispatchGroup()
        let result = Locked<StoredDictionary?>(nil)
        init() { done.enter() }
    }

    public init(local: DirectoryDictionaryStore, shared: PostgresDictionaryStore,
                logger: Logger = Logger(label: "dcserve.dictionary-store")) {
        self.local = local
        self.shared = shared
        self.logger = logger
    }

    /// Calls `observer` with every dictionary (hash, partition) removed by any instance (learnt by
    /// notification, by a reload after reconnecting, or removed by this instance's `prune`).
    public func onRemoval(_ observer: @escaping @Sendable (DictionaryHash, String?) -> Void) {
        shared.observe { change in
            if case .removed(let hash, let partition) = change { observer(hash, partition) }
        }
    }

    /// Calls `observer` with the record of every dictionary stored by another instance (learnt by
    /// notification; this instance's own `put`s are notified too, harmlessly).
    public func onStored(_ observer: @escaping @Sendable (DictionaryMetadata) -> Void) {
        let shared = self.shared
        shared.observe { change in
            if case .stored(let hash, let partition) = change, let record = shared.metadata(hash, partition: partition) {
                observer(record)
            }
        }
    }

    @discardableResult
    public func put(_ bytes: [UInt8], description: DictionaryDescription, now: Date) throws -> DictionaryHash {
        let hash = try shared.put(bytes, description: description, now: now)
        do { try local.put(bytes, description: description, now: now) } catch {
            logger.warning("cannot cache dictionary locally", metadata: ["hash": "\(hash.hex)", "error": "\(error)"])
        }
        return hash
    }

    public func get(_ hash: DictionaryHash, partition: String?) -> StoredDictionary? {
        guard let record = shared.metadata(hash, partition: partition) else { return nil }
        if let cached = local.loadVerified(hash) {
            localHits.increment()
            return StoredDictionary(hash: hash, bytes: cached.bytes, metadata: record)
        }
        let key = PostgresDictionaryStore.RowKey(partition: partition, hash: hash)
        let (flight, leader): (Flight, Bool) = flights.withLock { flights in
            if let existing = flights[key] { return (existing, false) }
            let flight = Flight()
            flights[key] = flight
            return (flight, true)
        }
        guard leader else {
            _ = flight.done.wait(timeout: .now() + shared.settings.connectTimeoutSeconds + 1)
            return flight.result.withLock { $0 }
        }
        let loaded = shared.get(hash, partition: partition)
        if let loaded {
            sharedLoads.increment()
            cacheLocally(loaded)
        }
        flight.result.withLock { $0 = loaded }
        flights.withLock { $0[key] = nil }
        flight.done.leave()
        return loaded
    }

    public func metadata(_ hash: DictionaryHash, partition: String?) -> DictionaryMetadata? {
        shared.metadata(hash, partition: partition)
    }

    public var records: [DictionaryMetadata] { shared.records }

    /// Records in the shared tier only (one lock per call, as the directory store: this runs up to
    /// twice per request). The local cache learns the recency for its byte budget from the shared
    /// records in `flush` and `prune` (``syncLocalRecency()``).
    @discardableResult
    public func recordServed(_ hash: DictionaryHash, partition: String?, at date: Date) -> Bool {
        shared.recordServed(hash, partition: partition, at: date)
    }

    /// Copies `lastServed` from the shared records into the local cache's records (they only move
    /// forward), so the cache evicts the least recently served first.
    func syncLocalRecency() {
        for record in shared.records {
            if let hash = DictionaryHash(hex: record.hash) {
                local.recordServed(hash, partition: record.partition, at: record.lastServed)
            }
        }
    }

    public func flush() throws {
        syncLocalRecency()
        var firstError: (any Error)?
        do { try shared.flush() } catch { firstError = error }
        do { try local.flush() } catch { firstError = firstError ?? error }
        if let firstError { throw firstError }
    }

    @discardableResult
    public func prune(now: Date) -> [DictionaryRemoval] {
        let removals = shared.prune(now: now)
        syncLocalRecency()
        local.prune(now: now)  // the cache's byte budget; not removals from the store
        return removals
    }

    public var hashes: [DictionaryHash] { shared.hashes }

    /// The shared tier's: history windows live in PostgreSQL, never in the local cache.
    public var historyWindows: (any HistoryWindowStore)? { shared }

    private func cacheLocally(_ stored: StoredDictionary) {
        let record = stored.metadata
        guard let pattern = record.pattern else { return }
        let description = DictionaryDescription(
            pattern: pattern, matchDestinations: record.matchDestinations, id: record.id.flatMap { DictionaryID($0) },
            rule: record.rule, sourcePath: record.sourcePath, maxAge: record.maxAge, partition: record.partition)
        // Off the request path: the durable write (fsync) costs milliseconds, and the caller keeps
        // the verified bytes it got (DictionaryLibrary holds them prepared). On the store's own serial
        // queue, not a global one: a write waiting for the disk should not hold one of the few global
        // pool threads that large responses are computed on.
        let local = self.local, logger = self.logger
        cacheWriter.async {
            do { try local.put(stored.bytes, description: description, now: record.lastServed) } catch {
                logger.warning("cannot cache dictionary locally", metadata: ["hash": "\(stored.hash.hex)", "error": "\(error)"])
            }
        }
    }
}
