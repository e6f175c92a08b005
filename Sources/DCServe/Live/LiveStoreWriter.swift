import CoreMetrics
import DictionaryCodec
import DictionaryTransport
import Dispatch
import Locking

/// Writes live versions (proxied responses advertised as dictionaries) to the store on one background
/// queue, in batches, so the store's durable write (fsync) never sits on a request's path and many
/// versions share one transaction (``DictionaryStore/put(batch:)``).
///
/// Group commit with a delay: the first version submitted while the queue is idle starts a batch
/// `batchDelay` later, which takes everything pending then (at most `maxBatchCount` versions); the
/// next batch starts `batchDelay` after one commits. So a version is committed within about
/// `batchDelay` plus two commit times of its submit (never more than the time to write
/// `maxPendingBytes`, which bounds what may wait), one transaction covers many versions, and a version
/// replaced within the delay (a client fetching again at once) is never written at all (superseded,
/// below). ``drain()`` commits at once.
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
/// superseded, overloaded); commits in `dcserve_live_store_batches_total`. Thread-safe; `submit`
/// never blocks.
final class LiveStoreWriter: Sendable {
    struct Key: Hashable, Sendable {
        var partition: String?
        var hash: DictionaryHash
    }

    enum Outcome: String, CaseIterable, Sendable {
        case written, failed, pending, superseded, overloaded
    }

    private struct Item: Sendable {
        var key: Key
        var write: DictionaryStoreWrite
        var stillRetained: @Sendable () -> Bool
    }

    private struct State {
        var pending = Set<Key>()
        /// Bytes of the queued versions plus those of the open reservations.
        var pendingBytes = 0
        /// Reservations made and neither submitted nor cancelled.
        var reservations = 0
        var queued: [Item] = []
        /// A commit is scheduled or running (it takes every item queued before it finishes).
        var committing = false
        /// A failed batch's first version is to be written again shortly (one at a time).
        var probing = false
    }

    private let queue = DispatchQueue(label: "dcserve.live-store", qos: .utility)
    private let state = Locked(State())
    private let store: any DictionaryStore
    let maxPendingBytes: Int
    let maxBatchCount: Int
    /// How long a batch waits for more versions (and for versions to be superseded) before committing.
    let batchDelay: Duration
    /// The default `batchDelay` (PostgreSQL's `wal_writer_delay` default for asynchronous commits).
    static let defaultBatchDelay = Duration.milliseconds(200)
    private let onCommitted: @Sendable ([DictionaryStoreWrite]) -> Void
    private let onFailed: @Sendable ([DictionaryStoreWrite], any Error) -> Void
    private let counters: [Outcome: Counter]
    private let batches = Counter(label: "dcserve_live_store_batches_total")

    /// - Parameters:
    ///   - onCommitted: called on the writer's queue with the versions of each committed batch.
    ///   - onFailed: called on the writer's queue with the versions of a batch the store refused, and why.
    init(store: any DictionaryStore, maxPendingBytes: Int = 64 << 20, maxBatchCount: Int = 1024,
         batchDelay: Duration = defaultBatchDelay,
         onCommitted: @escaping @Sendable ([DictionaryStoreWrite]) -> Void = { _ in },
         onFailed: @escaping @Sendable ([DictionaryStoreWrite], any Error) -> Void = { _, _ in }) {
        self.store = store
        self.maxPendingBytes = maxPendingBytes
        self.maxBatchCount = maxBatchCount
        self.batchDelay = batchDelay
        self.onCommitted = onCommitted
        self.onFailed = onFailed
        var counters: [Outcome: Counter] = [:]
        for outcome in Outcome.allCases {
            counters[outcome] = Counter(label: "dcserve_live_store_writes_total", dimensions: [("outcome", outcome.rawValue)])
        }
        self.counters = counters
    }

    /// Room for one version of `bytes`, held until it is submitted or cancelled: a caller that must
    /// not promise what cannot be stored reserves before advertising, so no other submit between its
    /// check and its submit can make it overloaded. Nil when the queue is too far behind (the caller
    /// counts that with ``refuseOverloaded()``).
    struct Reservation: Sendable {
        fileprivate let bytes: Int
    }

    /// Reserves room for a version of `bytes` (see ``Reservation``), or nil when more than
    /// `maxPendingBytes` would wait (one version always fits an empty queue).
    func reserve(bytes: Int) -> Reservation? {
        state.withLock { s in
            guard s.pending.isEmpty && s.reservations == 0 || s.pendingBytes + bytes <= maxPendingBytes else { return nil }
            s.pendingBytes += bytes
            s.reservations += 1
            return Reservation(bytes: bytes)
        }
    }

    /// Gives back a reservation that will not be submitted.
    func cancel(_ reservation: Reservation) {
        state.withLock { s in
            s.pendingBytes -= reservation.bytes
            s.reservations -= 1
        }
    }

    /// Queues `write` for the version `key` unless one of the cases above applies; `stillRetained` is
    /// asked on the queue just before its batch is written. With a `reservation` (made for these
    /// bytes) it is never refused as overloaded, and the reservation is used up either way. Returns the
    /// case that refused it, or nil.
    @discardableResult
    func submit(_ key: Key, write: DictionaryStoreWrite, reservation: Reservation? = nil,
                stillRetained: @escaping @Sendable () -> Bool) -> Outcome? {
        let bytes = write.bytes.count
        let (refused, start): (Outcome?, Bool) = state.withLock { s in
            if let reservation {
                s.pendingBytes -= reservation.bytes
                s.reservations -= 1
            }
            if s.pending.contains(key) { return (.pending, false) }
            if reservation == nil && s.pendingBytes + bytes > maxPendingBytes && !(s.pending.isEmpty && s.reservations == 0) {
                return (.overloaded, false)
            }
            s.pending.insert(key)
            s.pendingBytes += bytes
            s.queued.append(Item(key: key, write: write, stillRetained: stillRetained))
            guard !s.committing else { return (nil, false) }
            s.committing = true
            return (nil, true)
        }
        if let refused {
            counters[refused]?.increment()
            return refused
        }
        if start { scheduleCommit() }
        return nil
    }

    /// Counts a version the caller did not submit because ``reserve(bytes:)`` said no.
    func refuseOverloaded() { counters[.overloaded]?.increment() }

    private func scheduleCommit() {
        let (seconds, attoseconds) = batchDelay.components
        let nanoseconds = max(0, Int(min(seconds, 3600)) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        if nanoseconds == 0 {
            queue.async { [self] in commitPending(waiting: true) }
        } else {
            queue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [self] in commitPending(waiting: true) }
        }
    }

    /// Whether a version of `key` is queued and not yet written (or skipped).
    func isPending(_ key: Key) -> Bool {
        state.withLock { $0.pending.contains(key) }
    }

    /// Commits what is queued (runs on `queue`). `waiting`: the scheduled commit, which schedules the
    /// next one `batchDelay` after its batch while versions are queued (or clears `committing`);
    /// otherwise (``drain()``) batches follow one another until nothing is queued.
    private func commitPending(waiting: Bool) {
        while true {
            let items: [Item] = state.withLock { s in
                let n = min(s.queued.count, maxBatchCount)
                if n == 0 && waiting { s.committing = false }
                defer { s.queued.removeFirst(n) }
                return Array(s.queued.prefix(n))
            }
            if items.isEmpty { return }
            var retained: [Item] = []
            var superseded = 0
            for item in items {
                if item.stillRetained() { retained.append(item) } else { superseded += 1 }
            }
            var outcome = Outcome.written
            if !retained.isEmpty {
                let writes = retained.map(\.write)
                do {
                    try store.put(batch: writes)
                    batches.increment()
                    onCommitted(writes)
                } catch {
                    outcome = .failed
                    onFailed(writes, error)
                    probeLater(retained[0])
                }
            }
            state.withLock { s in
                for item in items {
                    s.pending.remove(item.key)
                    s.pendingBytes -= item.write.bytes.count
                }
            }
            if superseded > 0 { counters[.superseded]?.increment(by: superseded) }
            if !retained.isEmpty { counters[outcome]?.increment(by: retained.count) }
            if waiting && batchDelay > .zero {
                let more = state.withLock { s in
                    if s.queued.isEmpty { s.committing = false }
                    return !s.queued.isEmpty
                }
                if more { scheduleCommit() }
                return
            }
        }
    }

    /// After a failed batch, writes its first version again in a second (one probe at a time), so a
    /// store that recovers is noticed (``onCommitted``) even when no new version arrives meanwhile.
    private func probeLater(_ item: Item) {
        guard state.withLock({ s in s.probing ? false : { s.probing = true; return true }() }) else { return }
        queue.asyncAfter(deadline: .now() + 1) { [self] in
            state.withLock { $0.probing = false }
            submit(item.key, write: item.write, stillRetained: item.stillRetained)
        }
    }

    /// Blocks until every version queued so far is written (or skipped), without waiting for the
    /// batch delay (shutdown).
    func drain() {
        repeat {
            queue.sync { commitPending(waiting: false) }
        } while state.withLock({ !$0.queued.isEmpty })
    }
}
