/// A literals Huffman decoding table (RFC 8878 §4.2): `1 << tableLog` cells, each the symbol (low
/// byte) and its code length (high byte), indexed by the next `tableLog` bits of a stream.
struct HuffmanTable {
    static let maxTableLog = 12
    var cells: [UInt16]
    var tableLog: UInt32
    /// Whether the reference decoder would decode with this table through its double-symbol
    /// decoder (`HUF_decompress4X2`), which treats the last symbol of a stream leniently.
    var decodesDoubleSymbols = false

    /// The reference decoder's choice between its single- and double-symbol decoders for 4-stream
    /// literals (`HUF_selectDecoder`), from the literal count and the compressed section's size.
    static func referenceChoosesDoubleSymbols(literals: Int, compressedSize: Int) -> Bool {
        let costs: [(UInt32, UInt32, UInt32, UInt32)] = [
            (0, 0, 1, 1), (0, 0, 1, 1), (150, 216, 381, 119), (170, 205, 514, 112), (177, 199, 539, 110),
            (197, 194, 644, 107), (221, 192, 735, 107), (256, 189, 881, 106), (359, 188, 1167, 109),
            (582, 187, 1570, 114), (688, 187, 1712, 122), (825, 186, 1965, 136), (976, 185, 2131, 150),
            (1180, 186, 2070, 175), (1377, 185, 1731, 202), (1412, 185, 1695, 202),
        ]
        guard literals > 0 else { return false }
        let q = compressedSize >= literals ? 15 : compressedSize * 16 / literals
        let d256 = UInt32(truncatingIfNeeded: literals >> 8)
        let c = costs[q]
        let single = c.0 &+ c.1 &* d256
        var double = c.2 &+ c.3 &* d256
        double &+= double >> 5
        return double < single
    }

    /// Reads a Huffman tree description at the start of `input`; returns the table and the bytes
    /// used. Accepts and rejects as the reference decoder (`HUF_readStats`, weights up to 12 bits).
    static func read(_ input: UnsafeBufferPointer<UInt8>) throws(ZstdDecodeError) -> (HuffmanTable, Int) {
        guard input.count >= 1 else { throw .corrupt("missing Huffman tree description") }
        var weights = [UInt8](repeating: 0, count: 256)
        var headerSize = Int(input[0])
        var weightCount: Int
        if headerSize >= 128 {
            weightCount = headerSize - 127
            headerSize = (weightCount + 1) / 2
            guard headerSize + 1 <= input.count else { throw .corrupt("Huffman weights truncated") }
            var n = 0
            while n < weightCount {
                let byte = input[1 + n / 2]
                weights[n] = byte >> 4
                weights[n + 1] = byte & 15
                n += 2
            }
        } else {
            guard headerSize + 1 <= input.count else { throw .corrupt("Huffman weights truncated") }
            let stream = UnsafeBufferPointer(rebasing: input[1..<(1 + headerSize)])
            weightCount = try decodeFSEWeights(stream, into: &weights)
        }
        var rankCount = [UInt32](repeating: 0, count: maxTableLog + 1)
        var weightTotal: UInt32 = 0
        for n in 0..<weightCount {
            let w = Int(weights[n])
            guard w <= maxTableLog else { throw .corrupt("Huffman weight above 12") }
            rankCount[w] += 1
            weightTotal += (1 << UInt32(w)) >> 1
        }
        guard weightTotal != 0 else { throw .corrupt("Huffman weights all zero") }
        let tableLog = UInt32(32 - weightTotal.leadingZeroBitCount)  // highbit + 1
        guard tableLog <= maxTableLog else { throw .corrupt("Huffman table log above 12") }
        let rest = (UInt32(1) << tableLog) - weightTotal
        let restHigh = UInt32(31 - rest.leadingZeroBitCount)
        guard rest != 0, UInt32(1) << restHigh == rest else { throw .corrupt("Huffman weights do not complete a tree") }
        let lastWeight = Int(restHigh) + 1
        weights[weightCount] = UInt8(lastWeight)
        rankCount[lastWeight] += 1
        guard rankCount[1] >= 2, rankCount[1] & 1 == 0 else { throw .corrupt("Huffman tree invalid") }
        let symbolCount = weightCount + 1

        // Cells for longer codes (lower weights) come first; within a weight, symbols in order.
        var rankStart = [Int](repeating: 0, count: maxTableLog + 2)
        var next = 0
        for w in 1...Int(tableLog) {
            rankStart[w] = next
            next += Int(rankCount[w]) << (w - 1)
        }
        var cells = [UInt16](repeating: 0, count: 1 << tableLog)
        for s in 0..<symbolCount {
            let w = Int(weights[s])
            guard w > 0 else { continue }
            let length = 1 << (w - 1)
            let nbBits = Int(tableLog) + 1 - w
            let cell = UInt16(s) | UInt16(nbBits) << 8
            let start = rankStart[w]
            guard start + length <= cells.count else { throw .corrupt("Huffman tree invalid") }
            for i in start..<(start + length) { cells[i] = cell }
            rankStart[w] = start + length
        }
        return (HuffmanTable(cells: cells, tableLog: tableLog), headerSize + 1)
    }

    /// FSE-compressed weights (max table log 6, at most 255 weights), decoded as the reference's
    /// `FSE_decompress_wksp` does; returns the number of weights.
    private static func decodeFSEWeights(_ input: UnsafeBufferPointer<UInt8>, into weights: inout [UInt8]) throws(ZstdDecodeError) -> Int {
        let (description, used) = try FSENormalizedCounts.read(input, maxSymbol: 255)
        guard description.tableLog <= 6 else { throw .corrupt("Huffman weights FSE table log above 6") }
        let (symbols, initialNext) = try description.spread()
        var next = initialNext
        let tableSize = 1 << description.tableLog
        let largeLimit = Int16(1 << (description.tableLog - 1))
        let fast = !description.counts.contains { $0 >= largeLimit }
        // cell: symbol | nbBits << 8 | newState << 16
        var cells = [UInt32](repeating: 0, count: 64)
        for u in 0..<tableSize {
            let s = Int(symbols[u])
            let state = Int(next[s])
            next[s] &+= 1
            let nbBits = description.tableLog - (Int.bitWidth - 1 - state.leadingZeroBitCount)
            let newState = (state << nbBits) - tableSize
            cells[u] = UInt32(symbols[u]) | UInt32(nbBits) << 8 | UInt32(newState & 0xFFFF) << 16
        }
        guard let base = input.baseAddress else { throw .corrupt("Huffman weights truncated") }
        var br = try BackwardBitReader(base + used, count: input.count - used)
        let log = UInt32(description.tableLog)
        var state1 = Int(br.readBits(log))
        br.reload()
        var state2 = Int(br.readBits(log))
        br.reload()
        @inline(__always) func symbol(_ state: inout Int) -> UInt8 {
            let cell = cells[state & 63]
            let nbBits = (cell >> 8) & 0xFF
            let low = fast ? br.readBitsFast(nbBits) : br.readBits(nbBits)
            state = Int(cell >> 16) + Int(low)
            return UInt8(truncatingIfNeeded: cell)
        }
        let omax = 255
        var op = 0
        while br.reload() == .unfinished && op < omax - 3 {
            weights[op] = symbol(&state1)
            weights[op + 1] = symbol(&state2)
            weights[op + 2] = symbol(&state1)
            weights[op + 3] = symbol(&state2)
            op += 4
        }
        while true {
            guard op <= omax - 2 else { throw .corrupt("too many Huffman weights") }
            weights[op] = symbol(&state1)
            op += 1
            if br.reload() == .overflow {
                weights[op] = symbol(&state2)
                op += 1
                break
            }
            guard op <= omax - 2 else { throw .corrupt("too many Huffman weights") }
            weights[op] = symbol(&state2)
            op += 1
            if br.reload() == .overflow {
                weights[op] = symbol(&state1)
                op += 1
                break
            }
        }
        return op
    }

    /// Decodes one stream of `count` symbols into `out`; fails unless the stream is consumed exactly.
    func decodeStream(_ stream: UnsafePointer<UInt8>, length: Int, into out: UnsafeMutablePointer<UInt8>, count: Int)
        throws(ZstdDecodeError)
    {
        var br = try BackwardBitReader(stream, count: length)
        let log = tableLog
        try cells.withUnsafeBufferPointer { (table) throws(ZstdDecodeError) in
            guard let t = table.baseAddress else { throw .corrupt("empty Huffman table") }
            var i = 0
            // Fast part: after a full reload at least 56 bits are available, enough for 4 symbols.
            while count - i >= 4, br.reload() == .unfinished {
                var k = 0
                while k < 4 {
                    let cell = t[br.peekBitsFast(log)]
                    out[i + k] = UInt8(truncatingIfNeeded: cell)
                    br.skip(UInt32(cell >> 8))
                    k += 1
                }
                i += 4
            }
            let last = decodesDoubleSymbols ? count - 1 : count
            while i < last {
                br.reload()
                let cell = t[br.peekBitsFast(log)]
                out[i] = UInt8(truncatingIfNeeded: cell)
                br.skip(UInt32(cell >> 8))
                i += 1
            }
            if i < count {
                br.reload()
                out[i] = lastSymbolAsDoubleDecoder(t, &br)
            }
        }
        br.reload()
        guard br.isExactlyConsumed else { throw .corrupt("Huffman stream not consumed exactly") }
    }

    /// The last symbol of a stream as the reference's double-symbol decoder reads it
    /// (`HUF_decodeLastSymbolX2`): its table has `max(tableLog, 11)`-bit cells, and when a cell
    /// holds two symbols the first is taken and the bits counted are capped at the stream's end.
    private func lastSymbolAsDoubleDecoder(_ t: UnsafePointer<UInt16>, _ br: inout BackwardBitReader) -> UInt8 {
        let log = tableLog
        let wide = max(log, 11)
        let peek = br.peekBitsFast(wide)
        let first = t[peek >> Int(wide - log)]
        let firstBits = UInt32(first >> 8)
        let room = wide - firstBits
        var isDouble = false
        var secondBits: UInt32 = 0
        if room >= 1 {
            let rest = (peek << Int(firstBits)) & ((1 << Int(wide)) - 1)
            secondBits = UInt32(t[rest >> Int(wide - log)] >> 8)
            isDouble = secondBits <= room
        }
        if !isDouble {
            br.skip(firstBits)
        } else if br.consumed < 64 {
            br.skip(firstBits + secondBits)
            if br.consumed > 64 { br.consumed = 64 }
        }
        return UInt8(truncatingIfNeeded: first)
    }
}
