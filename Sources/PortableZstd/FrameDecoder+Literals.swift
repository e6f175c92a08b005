extension FrameDecoder {
    /// Decodes a block's literals section into `literals`; returns the literal count and the
    /// section's size.
    func decodeLiterals(_ src: UnsafePointer<UInt8>, size: Int) throws(ZstdDecodeError) -> (Int, Int) {
        let b0 = src[0]
        let sizeFormat = Int((b0 >> 2) & 3)
        let room = min(Self.blockSizeLimit, outputLimit - output.count)
        switch b0 & 3 {
        case 0:  // raw
            let headerSize: Int
            let count: Int
            switch sizeFormat {
            case 1:
                headerSize = 2
                count = le16(src) >> 4
            case 3:
                guard size >= 3 else { throw .corrupt("literals header truncated") }
                headerSize = 3
                count = le24(src) >> 4
            default:
                headerSize = 1
                count = Int(b0 >> 3)
            }
            guard count <= room else { throw overLimit }
            guard headerSize + count <= size else { throw .corrupt("raw literals truncated") }
            reserveLiterals(count)
            literals.update(from: src + headerSize, count: count)
            return (count, headerSize + count)
        case 1:  // RLE
            let headerSize: Int
            let count: Int
            switch sizeFormat {
            case 1:
                guard size >= 3 else { throw .corrupt("literals header truncated") }
                headerSize = 2
                count = le16(src) >> 4
            case 3:
                guard size >= 4 else { throw .corrupt("literals header truncated") }
                headerSize = 3
                count = le24(src) >> 4
            default:
                headerSize = 1
                count = Int(b0 >> 3)
            }
            guard count <= Self.blockSizeLimit else { throw .corrupt("too many literals") }
            guard count <= room else { throw overLimit }
            reserveLiterals(count)
            literals.update(repeating: src[headerSize], count: count)
            return (count, headerSize + 1)
        default:  // compressed (2) or treeless (3)
            let treeless = b0 & 3 == 3
            if treeless, huffman == nil { throw .corrupt("treeless literals without a previous Huffman table") }
            guard size >= 5 else { throw .corrupt("literals header truncated") }
            let lhc = Int(le32(src))
            var singleStream = false
            let headerSize: Int
            let count: Int
            let compressedSize: Int
            switch sizeFormat {
            case 2:
                headerSize = 4
                count = (lhc >> 4) & 0x3FFF
                compressedSize = lhc >> 18
            case 3:
                headerSize = 5
                count = (lhc >> 4) & 0x3FFFF
                compressedSize = (lhc >> 22) + (Int(src[4]) << 10)
            default:
                singleStream = sizeFormat == 0
                headerSize = 3
                count = (lhc >> 4) & 0x3FF
                compressedSize = (lhc >> 14) & 0x3FF
            }
            guard count <= Self.blockSizeLimit else { throw .corrupt("too many literals") }
            if !singleStream, count < 6 { throw .corrupt("fewer than 6 literals in 4 streams") }
            guard compressedSize + headerSize <= size else { throw .corrupt("compressed literals truncated") }
            guard count <= room else { throw overLimit }
            reserveLiterals(count)
            var streams = src + headerSize
            var streamsSize = compressedSize
            var table: HuffmanTable
            if treeless, let previous = huffman {
                table = previous
            } else {
                if !singleStream {
                    guard count != 0 else { throw .corrupt("no literals") }
                    guard compressedSize != 0 else { throw .corrupt("empty literals stream") }
                }
                let (read, used) = try HuffmanTable.read(UnsafeBufferPointer(start: streams, count: streamsSize))
                guard used < streamsSize else { throw .corrupt("Huffman tree fills the literals section") }
                streams += used
                streamsSize -= used
                table = read
                table.decodesDoubleSymbols = !singleStream
                    && HuffmanTable.referenceChoosesDoubleSymbols(literals: count, compressedSize: compressedSize)
            }
            if singleStream {
                try table.decodeStream(streams, length: streamsSize, into: literals, count: count)
            } else {
                try decodeFourStreams(table, streams, size: streamsSize, count: count)
            }
            huffman = table
            return (count, headerSize + compressedSize)
        }
    }

    private func decodeFourStreams(_ table: HuffmanTable, _ src: UnsafePointer<UInt8>, size: Int, count: Int)
        throws(ZstdDecodeError)
    {
        guard size >= 10 else { throw .corrupt("4-stream literals too small") }
        let length1 = le16(src)
        let length2 = le16(src + 2)
        let length3 = le16(src + 4)
        let length4 = size - (length1 + length2 + length3 + 6)
        guard length4 >= 0 else { throw .corrupt("4-stream jump table overruns") }
        let segment = (count + 3) / 4
        guard 3 * segment <= count else { throw .corrupt("4-stream literals too few") }
        let start1 = src + 6
        let start2 = start1 + length1
        let start3 = start2 + length2
        let start4 = start3 + length3
        try table.decodeStream(start1, length: length1, into: literals, count: segment)
        try table.decodeStream(start2, length: length2, into: literals + segment, count: segment)
        try table.decodeStream(start3, length: length3, into: literals + 2 * segment, count: segment)
        try table.decodeStream(start4, length: length4, into: literals + 3 * segment, count: count - 3 * segment)
    }
}
