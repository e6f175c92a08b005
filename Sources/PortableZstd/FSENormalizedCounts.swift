/// An FSE table description (RFC 8878 §4.1.1): the normalized probability of each symbol, -1 for
/// "less than 1".
struct FSENormalizedCounts {
    var counts: [Int16]
    /// Highest symbol present.
    var maxSymbol: Int
    var tableLog: Int

    /// Reads a description at the start of `input` (symbols up to `maxSymbol`); returns the counts and
    /// the number of bytes used. Accepts and rejects as the reference decoder's `FSE_readNCount`.
    static func read(_ input: UnsafeBufferPointer<UInt8>, maxSymbol: Int) throws(ZstdDecodeError) -> (Self, Int) {
        if input.count < 8 {
            var padded: (UInt64) = 0
            let result = try withUnsafeMutableBytes(of: &padded) { (raw) throws(ZstdDecodeError) -> (Self, Int) in
                let bytes = raw.bindMemory(to: UInt8.self)
                for i in 0..<input.count { bytes[i] = input[i] }
                return try readPadded(UnsafeBufferPointer(bytes), maxSymbol: maxSymbol)
            }
            guard result.1 <= input.count else { throw .corrupt("FSE table description truncated") }
            return result
        }
        return try readPadded(input, maxSymbol: maxSymbol)
    }

    @inline(__always) private static func le32(_ p: UnsafeBufferPointer<UInt8>, _ i: Int) -> UInt32 {
        UInt32(p[i]) | UInt32(p[i + 1]) << 8 | UInt32(p[i + 2]) << 16 | UInt32(p[i + 3]) << 24
    }

    /// `input.count >= 8`.
    private static func readPadded(_ input: UnsafeBufferPointer<UInt8>, maxSymbol: Int) throws(ZstdDecodeError) -> (Self, Int) {
        let iend = input.count
        var ip = 0
        let maxSV1 = maxSymbol + 1
        var counts = [Int16](repeating: 0, count: maxSV1)
        var charnum = 0
        var previous0 = false
        var bitStream = le32(input, ip)
        var nbBits = Int(bitStream & 0xF) + 5
        guard nbBits <= 15 else { throw .corrupt("FSE table log too large") }
        bitStream >>= 4
        var bitCount = 4
        let tableLog = nbBits
        var remaining = (1 << nbBits) + 1
        var threshold = 1 << nbBits
        nbBits += 1

        while true {
            if previous0 {
                var repeats = (~bitStream | 0x8000_0000).trailingZeroBitCount >> 1
                while repeats >= 12 {
                    charnum += 3 * 12
                    if ip <= iend - 7 {
                        ip += 3
                    } else {
                        bitCount -= 8 * (iend - 7 - ip)
                        bitCount &= 31
                        ip = iend - 4
                    }
                    bitStream = le32(input, ip) >> UInt32(bitCount)
                    repeats = (~bitStream | 0x8000_0000).trailingZeroBitCount >> 1
                }
                charnum += 3 * repeats
                bitStream >>= UInt32(2 * repeats)
                bitCount += 2 * repeats
                charnum += Int(bitStream & 3)
                bitCount += 2
                if charnum >= maxSV1 { break }
                if ip <= iend - 7 || ip + (bitCount >> 3) <= iend - 4 {
                    ip += bitCount >> 3
                    bitCount &= 7
                } else {
                    bitCount -= 8 * (iend - 4 - ip)
                    bitCount &= 31
                    ip = iend - 4
                }
                bitStream = le32(input, ip) >> UInt32(bitCount)
            }
            do {
                let max = (2 * threshold - 1) - remaining
                var count: Int
                if Int(bitStream & UInt32(threshold - 1)) < max {
                    count = Int(bitStream & UInt32(threshold - 1))
                    bitCount += nbBits - 1
                } else {
                    count = Int(bitStream & UInt32(2 * threshold - 1))
                    if count >= threshold { count -= max }
                    bitCount += nbBits
                }
                count -= 1
                if count >= 0 { remaining -= count } else { remaining += count }
                counts[charnum] = Int16(truncatingIfNeeded: count)
                charnum += 1
                previous0 = count == 0
                if remaining < threshold {
                    if remaining <= 1 { break }
                    nbBits = (Int.bitWidth - 1 - remaining.leadingZeroBitCount) + 1
                    threshold = 1 << (nbBits - 1)
                }
                if charnum >= maxSV1 { break }
                if ip <= iend - 7 || ip + (bitCount >> 3) <= iend - 4 {
                    ip += bitCount >> 3
                    bitCount &= 7
                } else {
                    bitCount -= 8 * (iend - 4 - ip)
                    bitCount &= 31
                    ip = iend - 4
                }
                bitStream = le32(input, ip) >> UInt32(bitCount)
            }
        }
        guard remaining == 1 else { throw .corrupt("FSE table description does not sum to its table size") }
        guard charnum <= maxSV1 else { throw .corrupt("FSE table description has too many symbols") }
        guard bitCount <= 32 else { throw .corrupt("FSE table description overruns") }
        ip += (bitCount + 7) >> 3
        counts.removeLast(maxSV1 - charnum)
        return (FSENormalizedCounts(counts: counts, maxSymbol: charnum - 1, tableLog: tableLog), ip)
    }

    /// The symbol of each of the `1 << tableLog` cells, spread as RFC 8878 §4.1.1 describes, and each
    /// symbol's initial "next state" counter. Fails if the cells are not covered exactly once.
    func spread() throws(ZstdDecodeError) -> (symbols: [UInt8], next: [UInt32]) {
        let tableSize = 1 << tableLog
        let mask = tableSize - 1
        var symbols = [UInt8](repeating: 0, count: tableSize)
        var next = [UInt32](repeating: 0, count: counts.count)
        var high = tableSize - 1
        for s in 0..<counts.count {
            if counts[s] == -1 {
                symbols[high] = UInt8(truncatingIfNeeded: s)
                high -= 1
                next[s] = 1
            } else {
                next[s] = UInt32(truncatingIfNeeded: Int(counts[s]))
            }
        }
        let step = (tableSize >> 1) + (tableSize >> 3) + 3
        var position = 0
        for s in 0..<counts.count {
            let n = Int(counts[s])
            if n <= 0 { continue }
            for _ in 0..<n {
                symbols[position] = UInt8(truncatingIfNeeded: s)
                position = (position + step) & mask
                while position > high { position = (position + step) & mask }
            }
        }
        guard position == 0 else { throw .corrupt("FSE table description does not fill its table") }
        return (symbols, next)
    }
}
