/// The literal-length, match-length and offset code tables of RFC 8878 §3.1.1.3.2.1 and their
/// predefined distributions.
enum SequenceCode {
    static let literalLengthBase: [UInt32] = [
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
        16, 18, 20, 22, 24, 28, 32, 40, 48, 64, 0x80, 0x100, 0x200, 0x400, 0x800, 0x1000,
        0x2000, 0x4000, 0x8000, 0x10000,
    ]
    static let literalLengthBits: [UInt8] = [
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        1, 1, 1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11, 12,
        13, 14, 15, 16,
    ]
    static let matchLengthBase: [UInt32] = [
        3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
        19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34,
        35, 37, 39, 41, 43, 47, 51, 59, 67, 83, 99, 0x83, 0x103, 0x203, 0x403, 0x803,
        0x1003, 0x2003, 0x4003, 0x8003, 0x10003,
    ]
    static let matchLengthBits: [UInt8] = [
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 7, 8, 9, 10, 11,
        12, 13, 14, 15, 16,
    ]
    /// Offset code n: base `(1 << n) - 3` for n ≥ 2 (the offset itself), 0 and 1 for the repeat codes.
    static let offsetBase: [UInt32] = (0...31).map { $0 < 2 ? UInt32($0) : UInt32((1 << $0) - 3) }
    static let offsetBits: [UInt8] = (0...31).map { UInt8($0) }

    static let literalLengthDefault: [Int16] = [
        4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1,
        2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1,
        -1, -1, -1, -1,
    ]
    static let matchLengthDefault: [Int16] = [
        1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1,
        -1, -1, -1, -1, -1,
    ]
    static let offsetDefault: [Int16] = [
        1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1,
    ]
}

/// Which of the three sequence fields a table decodes.
enum SequenceField {
    case literalLength, offset, matchLength

    var maxSymbol: Int {
        switch self {
        case .literalLength: 35
        case .offset: 31
        case .matchLength: 52
        }
    }

    var maxLog: Int {
        switch self {
        case .literalLength, .matchLength: 9
        case .offset: 8
        }
    }

    var base: [UInt32] {
        switch self {
        case .literalLength: SequenceCode.literalLengthBase
        case .offset: SequenceCode.offsetBase
        case .matchLength: SequenceCode.matchLengthBase
        }
    }

    var bits: [UInt8] {
        switch self {
        case .literalLength: SequenceCode.literalLengthBits
        case .offset: SequenceCode.offsetBits
        case .matchLength: SequenceCode.matchLengthBits
        }
    }
}

/// An FSE decoding table for one sequence field. Each of its 512 cells (only `1 << tableLog` used)
/// packs: base value (bits 0–31), extra bits (32–39), state bits (40–47), next state base (48–63).
struct SequenceTable {
    static let cellCount = 512
    var cells: [UInt64]
    var tableLog: UInt32

    @inline(__always) static func pack(base: UInt32, extraBits: UInt8, stateBits: Int, next: Int) -> UInt64 {
        UInt64(base) | UInt64(extraBits) << 32 | UInt64(UInt8(truncatingIfNeeded: stateBits)) << 40
            | UInt64(UInt16(truncatingIfNeeded: next)) << 48
    }

    /// The one-cell table of an RLE-coded field.
    static func rle(symbol: Int, field: SequenceField) -> SequenceTable {
        var cells = [UInt64](repeating: 0, count: cellCount)
        let packed = pack(base: field.base[symbol], extraBits: field.bits[symbol], stateBits: 0, next: 0)
        for i in 0..<cellCount { cells[i] = packed }
        return SequenceTable(cells: cells, tableLog: 0)
    }

    static func build(_ description: FSENormalizedCounts, field: SequenceField) throws(ZstdDecodeError) -> SequenceTable {
        let (symbols, initialNext) = try description.spread()
        var next = initialNext
        let tableSize = 1 << description.tableLog
        let base = field.base
        let bits = field.bits
        var cells = [UInt64](repeating: 0, count: cellCount)
        for u in 0..<tableSize {
            let s = Int(symbols[u])
            let state = Int(next[s])
            next[s] &+= 1
            let highBit = state > 0 ? Int.bitWidth - 1 - state.leadingZeroBitCount : 0
            let nbBits = description.tableLog - highBit
            let nextState = (state << max(nbBits, 0)) - tableSize
            cells[u] = pack(base: base[s], extraBits: bits[s], stateBits: nbBits, next: nextState)
        }
        return SequenceTable(cells: cells, tableLog: UInt32(description.tableLog))
    }

    static let defaultLiteralLength = try! build(
        FSENormalizedCounts(counts: SequenceCode.literalLengthDefault, maxSymbol: 35, tableLog: 6), field: .literalLength)
    static let defaultMatchLength = try! build(
        FSENormalizedCounts(counts: SequenceCode.matchLengthDefault, maxSymbol: 52, tableLog: 6), field: .matchLength)
    static let defaultOffset = try! build(
        FSENormalizedCounts(counts: SequenceCode.offsetDefault, maxSymbol: 28, tableLog: 5), field: .offset)
}
