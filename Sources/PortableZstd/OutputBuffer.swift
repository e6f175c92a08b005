/// The decoder's growable output: one contiguous allocation with `slack` writable bytes past
/// `capacity` for copies that overshoot. Owned by one decode call; not shared between threads.
final class OutputBuffer {
    static let slack = 64
    private(set) var base: UnsafeMutablePointer<UInt8>
    private(set) var capacity: Int
    var count = 0

    init(capacity: Int) {
        self.capacity = max(capacity, 0)
        base = .allocate(capacity: self.capacity + Self.slack)
    }

    deinit { base.deallocate() }

    /// Makes room for `needed` bytes in total (plus the slack), keeping the first `count`.
    func reserve(_ needed: Int) {
        guard needed > capacity else { return }
        var newCapacity = max(capacity, 1 << 16)
        while newCapacity < needed { newCapacity = newCapacity &* 2 }
        let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity + Self.slack)
        grown.update(from: base, count: count)
        base.deallocate()
        base = grown
        capacity = newCapacity
    }

    /// The first `count` bytes as an array.
    func bytes() -> [UInt8] {
        [UInt8](UnsafeBufferPointer(start: base, count: count))
    }
}
