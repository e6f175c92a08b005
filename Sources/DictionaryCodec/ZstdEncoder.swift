import CZstd

/// Streaming zstd compressor for `zstd` bodies and, given a dictionary, `dcz` bodies (40-byte header,
/// dictionary referenced as raw content through its cached `ZSTD_CDict`, window per
/// `DCZ.windowLog(dictionarySize:)`, content checksum on). See `ContentEncoder` for the contract.
public final class ZstdEncoder: ContentEncoder {
    public let coding: ContentCoding
    private let cctx: OpaquePointer
    private let prepared: PreparedZstdCompressionDictionary?
    private var pendingHeader: [UInt8]
    private let staging = OutputStaging(capacity: ZSTD_CStreamOutSize())
    private var finished = false

    /// A plain `zstd` encoder at `level` (window capped at 8 MiB, RFC 9659).
    public convenience init(level: Int) throws {
        try self.init(coding: .zstd, level: level, dictionary: nil)
    }

    /// A `dcz` encoder with `dictionary` at `level`.
    public convenience init(dictionary: CompressionDictionary, level: Int) throws {
        try self.init(coding: .dcz, level: level, dictionary: dictionary)
    }

    private init(coding: ContentCoding, level: Int, dictionary: CompressionDictionary?) throws {
        self.coding = coding
        cctx = try ZstdCompressionContextPool.shared.acquire()
        do {
            prepared = try Self.configure(cctx, coding: coding, level: level, dictionary: dictionary, inputSize: nil)
        } catch {
            ZstdCompressionContextPool.shared.release(cctx)
            throw error
        }
        pendingHeader = dictionary.map { DictionaryFrameHeader(coding: .dcz, hash: $0.hash).bytes } ?? []
    }

    deinit { ZstdCompressionContextPool.shared.release(cctx) }

    /// Sets level, checksum, window and dictionary on `cctx` for one frame. Returns the prepared
    /// dictionary the context now references (the caller keeps it alive while compressing).
    /// Dictionaries at least this large are referenced as a prefix in one-shot encodes instead of a
    /// prepared `ZSTD_CDict`: a CDict's tables, sized for its level, keep only a sample of a large
    /// dictionary's positions (a 12 MB resource against its previous version stayed 9 MB at level 3);
    /// a prefix is indexed with the frame's own tables plus long-distance matching (a few KB).
    static let prefixDictionaryBytes = 4 << 20

    /// Whether a one-shot encode of `inputSize` bytes references its dictionary as a prefix: a large
    /// dictionary (above), or one that prefers it (``CompressionDictionary/prefersPrefix``: used once or
    /// twice, so building a CDict would cost more than it saves) while no CDict for `level` exists.
    static func usesPrefix(_ dictionary: CompressionDictionary, coding: ContentCoding, level: Int, inputSize: Int?) -> Bool {
        guard inputSize != nil else { return false }
        if dictionary.count >= prefixDictionaryBytes { return true }
        return dictionary.prefersPrefix && dictionary.builtZstdCompression(level: coding.effectiveLevel(level)) == nil
    }

    /// `asPrefix`: the caller's ``usesPrefix(_:coding:level:inputSize:)`` answer, decided once per frame
    /// (nil: decided here).
    static func configure(
        _ cctx: OpaquePointer, coding: ContentCoding, level: Int, dictionary: CompressionDictionary?,
        inputSize: Int?, asPrefix: Bool? = nil
    ) throws -> PreparedZstdCompressionDictionary? {
        let level = coding.effectiveLevel(level)
        try zstdCheck(ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, Int32(level)), "compressionLevel")
        try zstdCheck(ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1), "checksumFlag")
        if let dictionary {
            let windowLog = DCZ.windowLog(dictionarySize: dictionary.count, contentSize: inputSize)
            if asPrefix ?? usesPrefix(dictionary, coding: coding, level: level, inputSize: inputSize) {
                // The caller references the bytes as a prefix (ZstdOneShot), raw content: the same frame
                // a raw-content CDict gives (no dictionary id). A large one is indexed with this frame's
                // own tables and long-distance matching, as `zstd --patch-from` does.
                try zstdCheck(ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, Int32(windowLog)), "windowLog")
                if dictionary.count >= prefixDictionaryBytes {
                    try zstdCheck(ZSTD_CCtx_setParameter(cctx, ZSTD_c_enableLongDistanceMatching, 1), "enableLongDistanceMatching")
                }
                return nil
            }
            let prepared = try dictionary.preparedForZstdCompression(level: level)
            try zstdCheck(ZSTD_CCtx_refCDict(cctx, prepared.cdict), "refCDict")
            // Explicit window: not superseded by the CDict (only its table parameters are used).
            try zstdCheck(ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, Int32(windowLog)), "windowLog")
            return prepared
        }
        // Plain zstd: the level's own window, capped at 8 MiB (RFC 9659 decoders need no more).
        let sizeHint = inputSize.map(UInt64.init) ?? UInt64(ZSTD_CONTENTSIZE_UNKNOWN)
        let levelWindow = Int(ZSTD_getCParams(Int32(level), sizeHint, 0).windowLog)
        if levelWindow > Zstd.maxWindowLog {
            try zstdCheck(ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, Int32(Zstd.maxWindowLog)), "windowLog")
        }
        return nil
    }

    public func update(_ input: UnsafeRawBufferPointer) throws -> [UInt8] {
        try compress(input, ZSTD_e_continue)
    }

    public func flush() throws -> [UInt8] {
        try compress(UnsafeRawBufferPointer(start: nil, count: 0), ZSTD_e_flush)
    }

    public func finish() throws -> [UInt8] {
        let out = try compress(UnsafeRawBufferPointer(start: nil, count: 0), ZSTD_e_end)
        finished = true
        return out
    }

    private func compress(_ input: UnsafeRawBufferPointer, _ directive: ZSTD_EndDirective) throws -> [UInt8] {
        guard !finished else { throw CodecError.encoderFailure("encoder already finished") }
        var output = pendingHeader
        pendingHeader = []
        var inBuffer = ZSTD_inBuffer(src: input.baseAddress, size: input.count, pos: 0)
        while true {
            var outBuffer = ZSTD_outBuffer(dst: staging.base, size: staging.capacity, pos: 0)
            let remaining = ZSTD_compressStream2(cctx, &outBuffer, &inBuffer, directive)
            try zstdCheck(remaining, "ZSTD_compressStream2")
            staging.drain(outBuffer.pos, into: &output)
            if directive == ZSTD_e_continue {
                if inBuffer.pos == inBuffer.size { break }
            } else if remaining == 0 {
                break
            }
        }
        return output
    }
}
