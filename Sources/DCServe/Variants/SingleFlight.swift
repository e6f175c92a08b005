import Dispatch
import HTTPCore
import Locking

/// One computation per key at a time, and a cap on concurrent large ones: the
/// compression middleware encodes each variant once (`SingleFlight<VariantKey, Value>`) and
/// reads and hashes each resource version once however many identical requests arrive together.
///
/// `run(key, …)` makes the first caller for `key` the leader: it computes (after re-checking the cache
/// the caller names) while every later caller for the same key waits for that result (the same value,
/// shared: arrays copy-on-write) instead of doing the same work again. Work on `largeInputBytes` or
/// more first takes one of `maxConcurrentLarge` slots, so a burst of distinct large jobs queues
/// instead of multiplying CPU and memory. Followers get the leader's error too.
///
/// Waiting blocks the calling thread: call it where the caller may block (the compression middleware
/// handles large bodies on its own threads, ``DictionaryCompressionMiddleware/compressionThreads``;
/// small ones take milliseconds), never on Dispatch's shared pool (on Linux it adds about one thread per
/// second while its threads wait). Both waits — a follower's for its leader, a leader's for a large
/// slot — are `BlockingWorkThreads.whileBlocked` sections: on such threads a waiter does not count as
/// running, so the next item in line starts meanwhile. No deadlock: a follower waits for a leader that
/// is already running on a thread, and a slot waiter for slot holders that are computing (a leader
/// waits for a slot before it computes, and computing waits for nothing here). Thread-safe.
final class SingleFlight<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// How a `run` ended for this caller.
    enum Role: Equatable { case leader, follower, cached }

    private final class Flight: @unchecked Sendable {
        // Written once by the leader before `done.leave()`, read by followers after `done.wait()`.
        let done = DispatchGroup()
        var result: Result<Value, any Error>?
        init() { done.enter() }
    }

    private let flights = Locked<[Key: Flight]>([:])
    private let largeSlots: DispatchSemaphore
    let largeInputBytes: Int

    init(maxConcurrentLarge: Int, largeInputBytes: Int = 1 << 20) {
        largeSlots = DispatchSemaphore(value: max(1, maxConcurrentLarge))
        self.largeInputBytes = largeInputBytes
    }

    /// The value for `key`: from `cached()` when a flight for it just finished, from the flight in
    /// progress, or computed now by `compute` (`inputBytes` decides whether it counts as large).
    func run(_ key: Key, inputBytes: Int, cached: () -> Value?,
             compute: () throws -> Value) throws -> (Value, Role) {
        let (flight, isLeader): (Flight, Bool) = flights.withLock { table in
            if let existing = table[key] { return (existing, false) }
            let new = Flight()
            table[key] = new
            return (new, true)
        }
        if !isLeader {
            BlockingWorkThreads.whileBlocked { flight.done.wait() }
            return (try flight.result!.get(), .follower)
        }
        let result: Result<Value, any Error>
        var role = Role.leader
        if let hit = cached() {
            // A flight for this key finished between the caller's cache miss and now.
            result = .success(hit)
            role = .cached
        } else {
            let large = inputBytes >= largeInputBytes
            if large { BlockingWorkThreads.whileBlocked { largeSlots.wait() } }
            result = Result { try compute() }
            if large { largeSlots.signal() }
        }
        flight.result = result
        flights.withLock { _ = $0.removeValue(forKey: key) }
        flight.done.leave()
        return (try result.get(), role)
    }
}
