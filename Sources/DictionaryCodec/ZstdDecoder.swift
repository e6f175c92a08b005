import CZstd

/// Streaming zstd decompressor for `zstd` bodies and, given a dictionary, `dcz` bodies (checks the
/// 40-byte header against the dictionary, then decodes one frame with the dictionary as raw content).
/// Exactly one zstd frame is accepted; bytes after it are `CodecError.trailingData`.
/// See `ContentDecoder` for the contract.
public final class ZstdDecoder: ContentDecoder {
    public let coding: ContentCoding
    private let dctx: OpaquePointer
    private let prepared: PreparedZstdDecompressionDictionary?
    private var header: DictionaryHeaderReader?
    private var budget: OutputBudget
    private let maxWindowLog: Int
    private let staging = OutputStaging(capacity: ZSTD_DStreamOutSize())
    private var frameComplete = false
    private var started = false

    /// A plain `zstd` decoder.
    public convenience init(limits: DecodeLimits = .default) throws {
        try self.init(coding: .zstd, dictionary: nil, limits: limits)
    }

    /// A `dcz` decoder for bodies made with `dictionary`.
    public convenience init(dictionary: CompressionDictionary, limits: DecodeLimits = .default) throws {
        try self.init(coding: .dcz, dictionary: dictionary, limits: limits)
    }

    private init(coding: ContentCoding, dictionary: CompressionDictionary?, limits: DecodeLimits) throws {
        self.coding = coding
        guard let dctx = ZSTD_createDCtx() else { throw CodecError.encoderFailure("ZSTD_createDCtx failed") }
        self.dctx = dctx
        budget = OutputBudget(limit: limits.maxOutput)
        maxWindowLog = min(
            max(limits.effectiveMaxWindowLog(for: coding, dictionarySize: dictionary?.count ?? 0), 10),  // ZSTD_WINDOWLOG_ABSOLUTEMIN
            31)  // ZSTD_WINDOWLOG_MAX_64
        do {
            try zstdCheck(ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, Int32(maxWindowLog)), "windowLogMax")
            if let dictionary {
                let prepared = try dictionary.preparedForZstdDecompression()
                try zstdCheck(ZSTD_DCtx_refDDict(dctx, prepared.ddict), "refDDict")
                self.prepared = prepared
                header = DictionaryHeaderReader(coding: .dcz, dictionaryHash: dictionary.hash)
            } else {
                prepared = nil
            }
        } catch {
            ZSTD_freeDCtx(dctx)
            throw error
        }
    }

    deinit { ZSTD_freeDCtx(dctx) }

    public func update(_ input: UnsafeRawBufferPointer) throws -> [UInt8] {
        var input = input
        if header != nil, !header!.isComplete {
            let used = try header!.consume(input)
            input = UnsafeRawBufferPointer(rebasing: input[used...])
        }
        guard !input.isEmpty else { return [] }
        guard !frameComplete else { throw CodecError.trailingData }
        started = true
        var output: [UInt8] = []
        var inBuffer = ZSTD_inBuffer(src: input.baseAddress, size: input.count, pos: 0)
        while true {
            var outBuffer = ZSTD_outBuffer(dst: staging.base, size: staging.capacity, pos: 0)
            let hint = ZSTD_decompressStream(dctx, &outBuffer, &inBuffer)
            try check(hint)
            try budget.add(outBuffer.pos)
            staging.drain(outBuffer.pos, into: &output)
            if hint == 0 {
                frameComplete = true
                if inBuffer.pos < inBuffer.size { throw CodecError.trailingData }
                break
            }
            // Stop once all input is consumed and the output buffer was not filled (nothing pending).
            if inBuffer.pos == inBuffer.size && outBuffer.pos < outBuffer.size { break }
        }
        return output
    }

    public func finish() throws -> [UInt8] {
        if let header, !header.isComplete { throw CodecError.truncated }
        guard started else { throw CodecError.truncated }
        var output: [UInt8] = []
        var inBuffer = ZSTD_inBuffer(src: nil, size: 0, pos: 0)
        while !frameComplete {
            var outBuffer = ZSTD_outBuffer(dst: staging.base, size: staging.capacity, pos: 0)
            let hint = ZSTD_decompressStream(dctx, &outBuffer, &inBuffer)
            try check(hint)
            try budget.add(outBuffer.pos)
            staging.drain(outBuffer.pos, into: &output)
            if hint == 0 { frameComplete = true; break }
            if outBuffer.pos < outBuffer.size { throw CodecError.truncated }
        }
        return output
    }

    private func check(_ result: Int) throws {
        guard ZSTD_isError(result) != 0 else { return }
        switch ZSTD_getErrorCode(result) {
        case ZSTD_error_frameParameter_windowTooLarge:
            throw CodecError.windowTooLarge(maxWindowLog: maxWindowLog)
        case ZSTD_error_memory_allocation:
            throw CodecError.encoderFailure("zstd: out of memory")
        default:
            throw CodecError.corrupt("zstd: " + String(cString: ZSTD_getErrorName(result)))
        }
    }
}
