import Locking

/// Reusable output buffers for one-shot encodes: an encoder writes its worst case (a compression bound,
/// about the input's size) into one of these and the caller copies out only the bytes written. A
/// bound-sized array per encode would be a fresh mapping of the input's size (glibc maps blocks of
/// 32 KiB and more on their own), page-faulted in full, for an output that is often a few hundred bytes.
///
/// Thread-safety: `withBuffer` hands a buffer to exactly one caller for the closure's duration; the
/// idle list is guarded by a `Locked`. At most `maxIdle` buffers of `bufferBytes` each are kept.
final class EncodeOutputScratch: Sendable {
    static let shared = EncodeOutputScratch(bufferBytes: 256 << 10, maxIdle: 8)

    private struct Buffer: @unchecked Sendable { let memory: UnsafeMutableRawBufferPointer }
    private let idle = Locked<[Buffer]>([])
    let bufferBytes: Int
    private let maxIdle: Int

    init(bufferBytes: Int, maxIdle: Int) {
        self.bufferBytes = bufferBytes
        self.maxIdle = maxIdle
    }

    /// Runs `body` with a buffer of at least `capacity` bytes, valid only inside `body`; nil (and
    /// `body` not run) when `capacity` exceeds `bufferBytes`.
    func withBuffer<R>(capacity: Int, _ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R? {
        guard capacity <= bufferBytes else { return nil }
        let buffer = idle.withLock { $0.popLast() }
            ?? Buffer(memory: .allocate(byteCount: bufferBytes, alignment: 16))
        defer {
            let kept = idle.withLock { idle -> Bool in
                guard idle.count < maxIdle else { return false }
                idle.append(buffer)
                return true
            }
            if !kept { buffer.memory.deallocate() }
        }
        return try body(buffer.memory)
    }

    /// The bytes `encode` writes into a buffer of `capacity` bytes (it returns how many it wrote), as an
    /// array of exactly that size: encoded in a scratch buffer and copied out when `capacity` fits one,
    /// else in an array of `capacity` bytes, right-sized (``rightSized(_:)``) afterwards.
    func encodeExact(capacity: Int, _ encode: (UnsafeMutablePointer<UInt8>) throws -> Int) rethrows -> [UInt8] {
        if let exact = try withBuffer(capacity: capacity, { scratch in
            let base = scratch.baseAddress!.bindMemory(to: UInt8.self, capacity: capacity)
            return [UInt8](UnsafeBufferPointer(start: base, count: try encode(base)))
        }) {
            return exact
        }
        return rightSized(try [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
            count = try encode(buffer.baseAddress!)
        })
    }

    /// Frees every idle buffer (when traffic stops).
    func freeIdle() {
        for buffer in idle.withLock({ idle -> [Buffer] in defer { idle = [] }; return idle }) { buffer.memory.deallocate() }
    }
}
