/// The decoder's output: one contiguous region with `slack` writable bytes past `capacity` for
/// copies that overshoot. Either owned and growable, or a fixed region lent by the caller (the
/// storage of the array being built) that the decoder never writes past `capacity + slack`.
/// Owned by one decode call; not shared between threads.
final class OutputBuffer {
    static let slack = 64
    private(set) var base: UnsafeMutablePointer<UInt8>
    private(set) var capacity: Int
    private let owned: Bool
    var count = 0

    init(capacity: Int) {
        self.capacity = max(capacity, 0)
        base = .allocate(capacity: self.capacity + Self.slack)
        owned = true
    }

    /// Borrows `base`, valid for `capacity + slack` bytes while this buffer is used.
    init(fixed base: UnsafeMutablePointer<UInt8>, capacity: Int) {
        self.base = base
        self.capacity = capacity
        owned = false
    }

    deinit { if owned { base.deallocate() } }

    /// Makes room for `needed` bytes in total (plus the slack), keeping the first `count`. A fixed
    /// buffer is never asked for more than its capacity (the decoder's output limit is that capacity).
    func reserve(_ needed: Int) {
        guard needed > capacity else { return }
        precondition(owned, "fixed output buffer asked to grow")
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
