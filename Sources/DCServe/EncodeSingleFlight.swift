import DictionaryTransport
import Dispatch
import Synchronization

/// One encode per variant at a time, and a cap on concurrent large encodes (#13 item 10).
///
/// `run(key, …)` makes the first caller for `key` the leader: it encodes (after re-checking the cache
/// the caller names) while every later caller for the same key waits for that result instead of
/// encoding the same bytes again. An encode of `largeInputBytes` or more first takes one of
/// `maxConcurrentLarge` slots, so a burst of distinct large encodes queues instead of multiplying
/// CPU and memory. Followers get the leader's error too (they would have failed the same way).
///
/// Waiting blocks the calling thread: call it where the caller may block (the compression middleware
/// encodes large bodies on worker queues; small ones take milliseconds). Thread-safe.
final class EncodeSingleFlight<Key: Hashable & Sendable>: Sendable {
    /// How a `run` ended for this caller.
    enum Role: Equatable { case leader, follower, cached }

    private final class Flight: @unchecked Sendable {
        // Written once by the leader before `done.leave()`, read by followers after `done.wait()`.
        let done = DispatchGroup()
        var result: Result<CachedVariant, any Error>?
        init() { done.enter() }
    }

    private let flights = Mutex<[Key: Flight]>([:])
    private let largeSlots: DispatchSemaphore
    let largeInputBytes: Int

    init(maxConcurrentLarge: Int, largeInputBytes: Int = 1 << 20) {
        largeSlots = DispatchSemaphore(value: max(1, maxConcurrentLarge))
        self.largeInputBytes = largeInputBytes
    }

    /// The variant for `key`: from `cached()` when a flight for it just finished, from the flight in
    /// progress, or encoded now by `encode` (`inputBytes` decides whether it counts as large).
    func run(_ key: Key, inputBytes: Int, cached: () -> CachedVariant?,
             encode: () throws -> CachedVariant) throws -> (CachedVariant, Role) {
        let (flight, isLeader): (Flight, Bool) = flights.withLock { table in
            if let existing = table[key] { return (existing, false) }
            let new = Flight()
            table[key] = new
            return (new, true)
        }
        if !isLeader {
            flight.done.wait()
            return (try flight.result!.get(), .follower)
        }
        let result: Result<CachedVariant, any Error>
        var role = Role.leader
        if let hit = cached() {
            // A flight for this key finished between the caller's cache miss and now.
            result = .success(hit)
            role = .cached
        } else {
            let large = inputBytes >= largeInputBytes
            if large { largeSlots.wait() }
            result = Result { try encode() }
            if large { largeSlots.signal() }
        }
        flight.result = result
        flights.withLock { _ = $0.removeValue(forKey: key) }
        flight.done.leave()
        return (try result.get(), role)
    }
}
