import DictionaryCodec

/// The recent distinct response bodies of one (history rule, group, partition), oldest first,
/// bounded by bytes; the source of that group's next dictionary.
///
/// A value type (its owner, ``HistoryDictionaryBuilder``, keeps it under a lock). Bodies are shared
/// copy-on-write arrays: adding one copies nothing.
struct HistoryWindow: Sendable {
    private(set) var bodies: [[UInt8]] = []
    private var keys: [Int] = []
    /// Sum of the kept bodies' sizes (≤ `capacity`).
    private(set) var totalBytes = 0
    /// Bytes of distinct content added since the last ``markBuilt()``.
    private(set) var newBytes = 0
    let capacity: Int

    init(capacity: Int) { self.capacity = max(1, capacity) }

    /// Adds `body` as the newest content. A body equal to one already kept only becomes the newest
    /// again (no new bytes). A body larger than the capacity keeps only its last `capacity` bytes.
    /// The oldest bodies are dropped until the window fits. Returns whether the body was new.
    @discardableResult
    mutating func add(_ body: [UInt8]) -> Bool {
        guard !body.isEmpty else { return false }
        let kept = body.count > capacity ? Array(body.suffix(capacity)) : body
        var hasher = Hasher()
        hasher.combine(kept.count)
        kept.withUnsafeBytes { hasher.combine(bytes: $0) }
        let key = hasher.finalize()
        if let i = keys.indices.first(where: { keys[$0] == key && bodies[$0] == kept }) {
            keys.append(keys.remove(at: i))
            bodies.append(bodies.remove(at: i))
            return false
        }
        keys.append(key)
        bodies.append(kept)
        totalBytes += kept.count
        newBytes += kept.count
        while totalBytes > capacity, bodies.count > 1 {
            totalBytes -= bodies.removeFirst().count
            keys.removeFirst()
        }
        return true
    }

    /// Starts counting new content again (a dictionary was built from the window).
    mutating func markBuilt() { newBytes = 0 }

    /// A raw dictionary of at most `maxBytes` from `bodies` (oldest first): the newest content last,
    /// so it sits at the closest offsets for the next responses; an older body that does not fit
    /// whole contributes its end.
    static func dictionary(from bodies: [[UInt8]], maxBytes: Int) -> [UInt8] {
        var taken: [ArraySlice<UInt8>] = []
        var remaining = maxBytes
        for body in bodies.reversed() where remaining > 0 {
            let piece = body.suffix(remaining)
            taken.append(piece)
            remaining -= piece.count
        }
        var out: [UInt8] = []
        out.reserveCapacity(maxBytes - remaining)
        for piece in taken.reversed() { out.append(contentsOf: piece) }
        return out
    }
}
