import Locking

/// The last `capacity` values appended, oldest dropped first. Thread-safe (one `Locked`); appending
/// is O(1) and allocates nothing once full. Used for the live view's recent requests.
public final class BoundedRing<Element: Sendable>: Sendable {
    private struct Storage: Sendable {
        var items: [Element] = []
        /// Index of the oldest element once `items` is full.
        var head = 0
        /// Values appended since creation (including dropped ones).
        var appended = 0
    }

    public let capacity: Int
    private let storage: Locked<Storage>

    /// `capacity` is at least 1.
    public init(capacity: Int) {
        self.capacity = max(1, capacity)
        var s = Storage()
        s.items.reserveCapacity(self.capacity)
        storage = Locked(s)
    }

    public func append(_ value: Element) {
        storage.withLock { s in
            s.appended += 1
            if s.items.count < capacity {
                s.items.append(value)
            } else {
                s.items[s.head] = value
                s.head = (s.head + 1) % capacity
            }
        }
    }

    /// The retained values, oldest first.
    public func snapshot() -> [Element] {
        storage.withLock { s in Array(s.items[s.head...] + s.items[..<s.head]) }
    }

    /// How many values were ever appended (so a reader can tell how many it missed).
    public var appendedCount: Int { storage.withLock { $0.appended } }
}
