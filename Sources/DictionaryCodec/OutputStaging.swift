/// A fixed-size scratch buffer that streaming encoders/decoders compress or decompress into before
/// appending the produced bytes to the caller's array (one `memcpy` per chunk). Owned by one coder.
final class OutputStaging {
    let buffer: UnsafeMutableBufferPointer<UInt8>

    init(capacity: Int) {
        buffer = .allocate(capacity: max(capacity, 1024))
    }

    deinit { buffer.deallocate() }

    var base: UnsafeMutablePointer<UInt8> { buffer.baseAddress! }
    var capacity: Int { buffer.count }

    /// Appends the first `count` staged bytes to `output`.
    func drain(_ count: Int, into output: inout [UInt8]) {
        if count > 0 { output.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[0..<count])) }
    }
}

/// Checks a running decoded-size total against the caller's cap.
struct OutputBudget {
    let limit: Int
    private(set) var produced = 0

    init(limit: Int) { self.limit = limit }

    mutating func add(_ count: Int) throws {
        produced += count
        if produced > limit { throw CodecError.outputLimitExceeded(limit: limit) }
    }
}
