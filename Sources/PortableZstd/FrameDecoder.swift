/// Decodes consecutive zstd frames (RFC 8878) from one input into one `OutputBuffer`, with a
/// raw-content dictionary as the history before each frame.
///
/// Accepts and rejects what libzstd's buffer-less streaming decoder (`ZSTD_decompressContinue`)
/// accepts and rejects, plus the limits of `ZstdDecodeLimits` and a content-size check on every frame.
/// Owns its scratch buffers; used by one thread for one call. The input and dictionary pointers must
/// stay valid while `decodeAll` runs.
final class FrameDecoder {
    static let blockSizeLimit = 128 * 1024

    /// The most output a decoder allocates ahead of decoding it, trusting declared content sizes:
    /// 16 MiB, or 1024 bytes per input byte. Beyond that the output grows as it is decoded, so a
    /// small hostile input declaring a huge size cannot make the decoder allocate it.
    static func preallocationLimit(inputCount: Int) -> Int {
        max(1 << 24, inputCount > Int.max >> 10 ? Int.max : inputCount << 10)
    }

    let input: UnsafePointer<UInt8>
    let inputCount: Int
    let dictionary: UnsafePointer<UInt8>
    let dictionaryCount: Int
    let limits: ZstdDecodeLimits
    let output: OutputBuffer
    /// The most bytes `output` may hold: `limits.maxOutputBytes`, or less when the caller sized a
    /// fixed output from the frames' declared content sizes.
    let outputLimit: Int
    var position = 0

    // Per-frame entropy state.
    private(set) var literals: UnsafeMutablePointer<UInt8>
    private var literalCapacity = 0
    var huffman: HuffmanTable?
    let literalLengthCells: UnsafeMutablePointer<UInt64>
    let offsetCells: UnsafeMutablePointer<UInt64>
    let matchLengthCells: UnsafeMutablePointer<UInt64>
    var literalLengthLog: UInt32 = 0
    var offsetLog: UInt32 = 0
    var matchLengthLog: UInt32 = 0
    var hasSequenceTables = false
    var rep0 = 1, rep1 = 4, rep2 = 8
    var frameStart = 0
    var blockSizeMax = 0

    init(input: UnsafeBufferPointer<UInt8>, dictionary: UnsafeBufferPointer<UInt8>, limits: ZstdDecodeLimits,
         empty: UnsafePointer<UInt8>, output: OutputBuffer? = nil)
    {
        self.input = input.baseAddress ?? empty
        inputCount = input.count
        self.dictionary = dictionary.baseAddress ?? empty
        dictionaryCount = dictionary.count
        self.limits = limits
        if let output {
            self.output = output
            outputLimit = min(limits.maxOutputBytes, output.capacity)
        } else {
            self.output = OutputBuffer(capacity: 0)
            outputLimit = limits.maxOutputBytes
        }
        literals = .allocate(capacity: 64)
        literals.initialize(repeating: 0, count: 64)
        literalLengthCells = .allocate(capacity: SequenceTable.cellCount)
        literalLengthCells.initialize(repeating: 0, count: SequenceTable.cellCount)
        offsetCells = .allocate(capacity: SequenceTable.cellCount)
        offsetCells.initialize(repeating: 0, count: SequenceTable.cellCount)
        matchLengthCells = .allocate(capacity: SequenceTable.cellCount)
        matchLengthCells.initialize(repeating: 0, count: SequenceTable.cellCount)
    }

    deinit {
        literals.deallocate()
        literalLengthCells.deallocate()
        offsetCells.deallocate()
        matchLengthCells.deallocate()
    }

    var remaining: Int { inputCount - position }

    /// The error for output beyond `outputLimit`.
    var overLimit: ZstdDecodeError {
        outputLimit < limits.maxOutputBytes
            ? .corrupt("frames decode to more than their declared content sizes")
            : .outputTooLarge(limit: limits.maxOutputBytes)
    }

    /// Makes `literals` hold at least `count` bytes plus 64 bytes of readable slack.
    func reserveLiterals(_ count: Int) {
        guard count > literalCapacity else { return }
        var capacity = 4096
        while capacity < count { capacity *= 2 }
        literals.deallocate()
        literals = .allocate(capacity: capacity + 64)
        literals.initialize(repeating: 0, count: capacity + 64)
        literalCapacity = capacity
    }

    @inline(__always) func le16(_ p: UnsafePointer<UInt8>) -> Int { Int(p[0]) | Int(p[1]) << 8 }
    @inline(__always) func le24(_ p: UnsafePointer<UInt8>) -> Int { Int(p[0]) | Int(p[1]) << 8 | Int(p[2]) << 16 }
    @inline(__always) func le32(_ p: UnsafePointer<UInt8>) -> UInt32 {
        UInt32(p[0]) | UInt32(p[1]) << 8 | UInt32(p[2]) << 16 | UInt32(p[3]) << 24
    }

    /// Decodes every frame of the input; skippable frames are skipped.
    func decodeAll() throws(ZstdDecodeError) {
        while position < inputCount {
            guard remaining >= 4 else { throw .truncated }
            let magic = le32(input + position)
            if magic & 0xFFFF_FFF0 == 0x184D_2A50 {
                guard remaining >= 8 else { throw .truncated }
                let size = Int(le32(input + position + 4))
                guard remaining - 8 >= size else { throw .truncated }
                position += 8 + size
            } else if magic == 0xFD2F_B528 {
                try decodeFrame()
            } else {
                throw .badMagic
            }
        }
    }

    private func decodeFrame() throws(ZstdDecodeError) {
        guard remaining >= 5 else { throw .truncated }
        let p = input + position
        let descriptor = p[4]
        guard descriptor & 0x08 == 0 else { throw .reservedBit }
        let singleSegment = descriptor & 0x20 != 0
        let hasChecksum = descriptor & 0x04 != 0
        let dictionaryIDSize = [0, 1, 2, 4][Int(descriptor & 3)]
        let fcsCode = Int(descriptor >> 6)
        let fcsSize = [singleSegment ? 1 : 0, 2, 4, 8][fcsCode]
        let headerSize = 5 + (singleSegment ? 0 : 1) + dictionaryIDSize + fcsSize
        guard remaining >= headerSize else { throw .truncated }
        var at = 5
        var windowSize: UInt64 = 0
        if !singleSegment {
            let exponent = UInt64(p[at] >> 3) + 10
            guard exponent <= 31 else { throw .windowTooLarge(windowBytes: 1 << exponent, limit: limits.maxWindowBytes) }
            windowSize = 1 << exponent
            windowSize += (windowSize >> 3) * UInt64(p[at] & 7)
            at += 1
        }
        var dictionaryID: UInt32 = 0
        for i in 0..<dictionaryIDSize { dictionaryID |= UInt32(p[at + i]) << (8 * UInt32(i)) }
        at += dictionaryIDSize
        var contentSize: UInt64? = nil
        if fcsSize > 0 {
            var v: UInt64 = 0
            for i in 0..<fcsSize { v |= UInt64(p[at + i]) << (8 * UInt64(i)) }
            contentSize = fcsSize == 2 ? v + 256 : v
        }
        if singleSegment { windowSize = contentSize ?? 0 }
        guard dictionaryID == 0 else { throw .dictionaryIDMismatch(frameDictionaryID: dictionaryID) }
        guard windowSize <= UInt64(limits.maxWindowBytes) else {
            throw .windowTooLarge(windowBytes: windowSize, limit: limits.maxWindowBytes)
        }
        position += headerSize
        blockSizeMax = Int(min(windowSize, UInt64(Self.blockSizeLimit)))

        // A fresh frame: history is the dictionary, entropy state is empty.
        frameStart = output.count
        huffman = nil
        hasSequenceTables = false
        rep0 = 1; rep1 = 4; rep2 = 8
        if let contentSize, contentSize <= UInt64(outputLimit - output.count),
           contentSize <= UInt64(Self.preallocationLimit(inputCount: inputCount))
        {
            output.reserve(output.count + Int(contentSize))
        }

        while true {
            guard remaining >= 3 else { throw .truncated }
            let header = le24(input + position)
            position += 3
            let last = header & 1 != 0
            let size = header >> 3
            switch (header >> 1) & 3 {
            case 0:
                guard size <= blockSizeMax else { throw .blockTooLarge }
                guard remaining >= size else { throw .truncated }
                try ensureOutputRoom(size)
                (output.base + output.count).update(from: input + position, count: size)
                output.count += size
                position += size
            case 1:
                guard blockSizeMax >= 1 else { throw .blockTooLarge }
                guard remaining >= 1 else { throw .truncated }
                try ensureOutputRoom(size)
                guard size <= blockSizeMax else { throw .blockTooLarge }
                (output.base + output.count).update(repeating: input[position], count: size)
                output.count += size
                position += 1
            case 2:
                guard size <= blockSizeMax else { throw .blockTooLarge }
                guard remaining >= size else { throw .truncated }
                if size > 0 { try decodeCompressedBlock(input + position, size: size) }
                position += size
            default:
                throw .corrupt("reserved block type")
            }
            if last { break }
        }
        let decoded = output.count - frameStart
        if let contentSize, contentSize != UInt64(decoded) {
            throw .contentSizeMismatch(declared: contentSize, decoded: decoded)
        }
        if hasChecksum {
            guard remaining >= 4 else { throw .truncated }
            var hash = XXH64()
            hash.update(UnsafeRawBufferPointer(start: output.base + frameStart, count: decoded))
            guard UInt32(truncatingIfNeeded: hash.digest()) == le32(input + position) else { throw .checksumMismatch }
            position += 4
        }
    }

    /// Fails unless `count` more bytes fit the output limit; makes room for them.
    @inline(__always) private func ensureOutputRoom(_ count: Int) throws(ZstdDecodeError) {
        guard count <= outputLimit - output.count else { throw overLimit }
        output.reserve(output.count + count)
    }

    // MARK: - Compressed blocks

    private func decodeCompressedBlock(_ src: UnsafePointer<UInt8>, size: Int) throws(ZstdDecodeError) {
        guard size >= 2 else { throw .corrupt("compressed block too small") }
        let (literalCount, used) = try decodeLiterals(src, size: size)
        let seq = src + used
        let seqSize = size - used
        guard seqSize >= 1 else { throw .corrupt("missing sequences section") }
        var ip = 1
        var nbSeq = Int(seq[0])
        if nbSeq == 0 {
            guard seqSize == 1 else { throw .corrupt("bytes after an empty sequences section") }
            try finishBlock(literalCount: literalCount)
            return
        }
        if nbSeq > 0x7F {
            if nbSeq == 0xFF {
                guard ip + 2 <= seqSize else { throw .corrupt("sequences header truncated") }
                nbSeq = le16(seq + ip) + 0x7F00
                ip += 2
            } else {
                guard ip < seqSize else { throw .corrupt("sequences header truncated") }
                nbSeq = ((nbSeq - 0x80) << 8) + Int(seq[ip])
                ip += 1
            }
        }
        guard ip + 1 <= seqSize else { throw .corrupt("sequences header truncated") }
        let modes = seq[ip]
        ip += 1
        ip += try buildTable(mode: Int(modes >> 6), field: .literalLength, cells: literalLengthCells,
                             log: &literalLengthLog, seq + ip, seqSize - ip)
        ip += try buildTable(mode: Int((modes >> 4) & 3), field: .offset, cells: offsetCells,
                             log: &offsetLog, seq + ip, seqSize - ip)
        ip += try buildTable(mode: Int((modes >> 2) & 3), field: .matchLength, cells: matchLengthCells,
                             log: &matchLengthLog, seq + ip, seqSize - ip)
        if nbSeq == 0 {
            try finishBlock(literalCount: literalCount)
            return
        }
        hasSequenceTables = true
        try executeSequences(count: nbSeq, stream: seq + ip, streamSize: seqSize - ip, literalCount: literalCount)
    }

    /// A block without sequences: its literals are its content.
    private func finishBlock(literalCount: Int) throws(ZstdDecodeError) {
        guard literalCount <= blockSizeMax else { throw .blockTooLarge }
        try ensureOutputRoom(literalCount)
        (output.base + output.count).update(from: literals, count: literalCount)
        output.count += literalCount
    }

    private func buildTable(mode: Int, field: SequenceField, cells: UnsafeMutablePointer<UInt64>, log: inout UInt32,
                            _ src: UnsafePointer<UInt8>, _ available: Int) throws(ZstdDecodeError) -> Int
    {
        switch mode {
        case 0:
            let table: SequenceTable
            switch field {
            case .literalLength: table = SequenceTable.defaultLiteralLength
            case .offset: table = SequenceTable.defaultOffset
            case .matchLength: table = SequenceTable.defaultMatchLength
            }
            table.cells.withUnsafeBufferPointer { cells.update(from: $0.baseAddress!, count: SequenceTable.cellCount) }
            log = table.tableLog
            return 0
        case 1:
            guard available >= 1 else { throw .corrupt("RLE sequence table truncated") }
            let symbol = Int(src[0])
            guard symbol <= field.maxSymbol else { throw .corrupt("RLE sequence symbol out of range") }
            let cell = SequenceTable.pack(base: field.base[symbol], extraBits: field.bits[symbol], stateBits: 0, next: 0)
            cells.update(repeating: cell, count: SequenceTable.cellCount)
            log = 0
            return 1
        case 2:
            let (description, used) = try FSENormalizedCounts.read(
                UnsafeBufferPointer(start: src, count: available), maxSymbol: field.maxSymbol)
            guard description.tableLog <= field.maxLog else { throw .corrupt("sequence table log too large") }
            let table = try SequenceTable.build(description, field: field)
            table.cells.withUnsafeBufferPointer { cells.update(from: $0.baseAddress!, count: SequenceTable.cellCount) }
            log = table.tableLog
            return used
        default:
            guard hasSequenceTables else { throw .corrupt("repeated sequence table without a previous one") }
            return 0
        }
    }
}
