/// Reads a zstd backward bitstream (FSE and Huffman streams): the last byte holds the end mark, bits
/// are consumed from the end towards the start through a 64-bit container.
///
/// Its state transitions are those of the reference decoder's bit reader, including what happens when
/// a corrupt stream asks for more bits than it holds (`consumed` passes 64 and reads wrap), so that
/// the decoder accepts and rejects exactly the inputs libzstd does. The caller guarantees that
/// `base` stays valid for `count` bytes while the reader is used.
struct BackwardBitReader {
    enum Status: Int { case unfinished = 0, endOfBuffer = 1, completed = 2, overflow = 3 }

    let base: UnsafePointer<UInt8>
    /// Index of the 8 bytes loaded into `container` (0 once the start is reached).
    var position: Int
    var container: UInt64
    /// Bits of `container` already used, counted from its top; above 64 after an overrun.
    var consumed: UInt32

    /// Fails with `corrupt` for an empty stream or one whose last byte is 0 (no end mark).
    init(_ base: UnsafePointer<UInt8>, count: Int) throws(ZstdDecodeError) {
        self.base = base
        guard count >= 1 else { throw .corrupt("empty bitstream") }
        let last = base[count - 1]
        guard last != 0 else { throw .corrupt("bitstream without end mark") }
        let markBits = UInt32(8 - (7 - last.leadingZeroBitCount))  // 8 - highbit(last)
        if count >= 8 {
            position = count - 8
            container = Self.load(base + position)
            consumed = markBits
        } else {
            position = 0
            var c: UInt64 = 0
            for i in 0..<count { c |= UInt64(base[i]) << (8 * UInt64(i)) }
            container = c
            consumed = markBits + UInt32(8 - count) * 8
        }
    }

    @inline(__always) static func load(_ p: UnsafePointer<UInt8>) -> UInt64 {
        UInt64(littleEndian: UnsafeRawPointer(p).loadUnaligned(as: UInt64.self))
    }

    /// `nbBits` (0...31) read as the reference's `BIT_readBits`.
    @inline(__always) mutating func readBits(_ nbBits: UInt32) -> UInt64 {
        let start = UInt64(truncatingIfNeeded: 64 &- consumed &- nbBits) & 63
        let value = (container &>> start) & ((1 &<< UInt64(nbBits)) &- 1)
        consumed &+= nbBits
        return value
    }

    /// `nbBits` (1...31) read as the reference's `BIT_readBitsFast`.
    @inline(__always) mutating func readBitsFast(_ nbBits: UInt32) -> UInt64 {
        let value = (container &<< UInt64(consumed & 63)) &>> UInt64((64 &- nbBits) & 63)
        consumed &+= nbBits
        return value
    }

    /// The next `nbBits` (1...63) without consuming them (zero-filled past the stream's start).
    @inline(__always) func peekBitsFast(_ nbBits: UInt32) -> Int {
        Int(truncatingIfNeeded: (container &<< UInt64(consumed & 63)) &>> UInt64((64 &- nbBits) & 63))
    }

    @inline(__always) mutating func skip(_ nbBits: UInt32) { consumed &+= nbBits }

    /// Refills `container` as the reference's `BIT_reloadDStream`.
    @inline(__always) @discardableResult
    mutating func reload() -> Status {
        if consumed > 64 { return .overflow }
        if position >= 8 {
            position -= Int(consumed >> 3)
            consumed &= 7
            container = Self.load(base + position)
            return .unfinished
        }
        if position == 0 { return consumed < 64 ? .endOfBuffer : .completed }
        var nbBytes = Int(consumed >> 3)
        var result = Status.unfinished
        if position - nbBytes < 0 {
            nbBytes = position
            result = .endOfBuffer
        }
        position -= nbBytes
        consumed -= UInt32(nbBytes * 8)
        container = Self.load(base + position)
        return result
    }

    /// Whether every bit was consumed, exactly.
    var isExactlyConsumed: Bool { position == 0 && consumed == 64 }
}
