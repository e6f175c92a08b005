import Locking

/// Memoises a pure computation per key, for values the request path would otherwise recompute on
/// every request (structured-field parsing and serialisation of header values clients and rules
/// repeat). At most `capacity` entries: the memo is emptied when full, so hostile unique keys cost one
/// computation each and bounded memory. Thread-safe; `compute` runs outside the lock.
final class BoundedMemo<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    let capacity: Int
    private let entries = Locked<[Key: Value]>([:])

    init(capacity: Int = 4096) { self.capacity = capacity }

    func value(for key: Key, compute: (Key) -> Value) -> Value {
        if let hit = entries.withLock({ $0[key] }) { return hit }
        let value = compute(key)
        entries.withLock { memo in
            if memo.count >= capacity { memo.removeAll(keepingCapacity: true) }
            memo[key] = value
        }
        return value
    }

    /// Forgets every entry and the table's storage (for idle time).
    func removeAll() {
        entries.withLock { $0 = [:] }
    }
}
