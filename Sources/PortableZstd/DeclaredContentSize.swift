/// The total content size an input's frames declare, found by walking frame and block headers
/// without decoding: nil when a frame omits its size, or when the headers are malformed or
/// truncated (the decoder then reports the problem).
enum DeclaredContentSize {
    static func total(of input: UnsafeBufferPointer<UInt8>) -> Int? {
        var pos = 0
        var total = 0
        let n = input.count
        @inline(__always) func le32(_ i: Int) -> Int {
            Int(input[i]) | Int(input[i + 1]) << 8 | Int(input[i + 2]) << 16 | Int(input[i + 3]) << 24
        }
        while pos < n {
            guard n - pos >= 5 else { return nil }
            let magic = le32(pos)
            if magic & 0xFFFF_FFF0 == 0x184D_2A50 {
                guard n - pos >= 8 else { return nil }
                let size = le32(pos + 4)
                guard n - pos - 8 >= size else { return nil }
                pos += 8 + size
                continue
            }
            guard magic == 0xFD2F_B528 else { return nil }
            let descriptor = input[pos + 4]
            let singleSegment = descriptor & 0x20 != 0
            let fcsCode = Int(descriptor >> 6)
            guard singleSegment || fcsCode != 0 else { return nil }
            let fcsSize = [1, 2, 4, 8][fcsCode]
            let fcsAt = pos + 5 + (singleSegment ? 0 : 1) + [0, 1, 2, 4][Int(descriptor & 3)]
            guard n - fcsAt >= fcsSize else { return nil }
            var size: UInt64 = 0
            for i in 0..<fcsSize { size |= UInt64(input[fcsAt + i]) << (8 * UInt64(i)) }
            if fcsSize == 2 { size += 256 }
            guard size <= UInt64(Int.max - total) else { return nil }
            total += Int(size)
            pos = fcsAt + fcsSize
            while true {
                guard n - pos >= 3 else { return nil }
                let header = Int(input[pos]) | Int(input[pos + 1]) << 8 | Int(input[pos + 2]) << 16
                pos += 3
                let blockSize: Int
                switch (header >> 1) & 3 {
                case 0, 2: blockSize = header >> 3
                case 1: blockSize = 1
                default: return nil
                }
                guard n - pos >= blockSize else { return nil }
                pos += blockSize
                if header & 1 != 0 { break }
            }
            if descriptor & 0x04 != 0 {
                guard n - pos >= 4 else { return nil }
                pos += 4
            }
        }
        return total
    }
}
