import CoreMetrics
import DictionaryCodec
import Dispatch
import Synchronization

/// Writes live versions (proxied responses advertised as dictionaries) to the store on one background
/// queue, so the store's durable write (fsync) never sits on a request's path.
///
/// A version not yet written only costs a later miss (it is usable at once from the library and the
/// store verifies bytes on load), so the writer may skip work, and it does, in three cases:
/// - **pending**: the same (partition, hash) is already queued (a feed answered unchanged many times);
/// - **superseded**: by its turn the version has left the live index's retention (newer versions
///   replaced it, or the byte budget evicted it): no client may name it any more;
/// - **overloaded**: more than `maxPendingBytes` of bodies are waiting (a feed where every response is
///   new, faster than the disk): the newest is dropped rather than letting the queue grow unbounded.
///
/// Outcomes are counted in `dcserve_live_store_writes_total{outcome}` (written, failed, pending,
/// superseded, overloaded). Thread-safe; `submit` never blocks.
final class LiveStoreWriter: Sendable {
    struct Key: Hashable, Sendable {
        var partition: String?
        var hash: DictionaryHash
    }

    enum Outcome: String, CaseIterable, Sendable {
        case written, failed, pending, superseded, overloaded
    }

    private let queue = DispatchQueue(label: "dcserve.live-store", qos: .utility)
    private let state = Mutex(State())
    let maxPendingBytes: Int
    private let counters: [Outcome: Counter]

    private struct State {
        var pending = Set<Key>()
        var pendingBytes = 0
    }

    init(maxPendingBytes: Int = 64 << 20) {
        self.maxPendingBytes = maxPendingBytes
        var counters: [Outcome: Counter] = [:]
        for outcome in Outcome.allCases {
            counters[outcome] = Counter(label: "dcserve_live_store_writes_total", dimensions: [("outcome", outcome.rawValue)])
        }
        self.counters = counters
    }

    /// Queues `write` for the version `key` of `bytes` bytes unless one of the cases above applies;
    /// `stillRetained` is asked on the queue just before writing. `write` returns whether it stored.
    @discardableResult
    func submit(_ key: Key, bytes: Int, stillRetained: @escaping @Sendable () -> Bool,
                write: @escaping @Sendable () -> Bool) -> Outcome? {
        let refused: Outcome? = state.withLock { s in
            if s.pending.contains(key) { return .pending }
            if s.pendingBytes + bytes > maxPendingBytes && !s.pending.isEmpty { return .overloaded }
            s.pending.insert(key)
            s.pendingBytes += bytes
            return nil
        }
        if let refused {
            counters[refused]?.increment()
            return refused
        }
        queue.async { [self] in
            let outcome: Outcome = stillRetained() ? (write() ? .written : .failed) : .superseded
            state.withLock { s in
                s.pending.remove(key)
                s.pendingBytes -= bytes
            }
            counters[outcome]?.increment()
        }
        return nil
    }

    /// Blocks until every queued write ran (shutdown).
    func drain() { queue.sync {} }
}
