import CBrotli

/// Streaming brotli decompressor for `br` bodies and, given a dictionary, `dcb` bodies (checks the
/// 36-byte header, then decodes with the dictionary attached as a raw prefix through
/// `BrotliDecoderAttachDictionary`). Large-window streams are rejected (`.windowTooLarge`), as is a
/// stream whose WBITS exceed `DecodeLimits.maxWindowLog`. Bytes after the end of the stream are
/// `.trailingData`. See `ContentDecoder` for the contract.
///
/// Lifetime: brotli's decoder references the dictionary bytes; the decoder holds the
/// `CompressionDictionary`, so they stay alive as long as it does.
public final class BrotliDecoder: ContentDecoder {
    public let coding: ContentCoding
    private let state: OpaquePointer
    private let dictionary: CompressionDictionary?
    private var header: DictionaryHeaderReader?
    private var budget: OutputBudget
    private let maxWindowLog: Int
    private let staging = OutputStaging(capacity: 128 * 1024)
    private var windowChecked = false
    private var streamComplete = false

    public convenience init(limits: DecodeLimits = .default) throws {
        try self.init(coding: .br, dictionary: nil, limits: limits)
    }

    public convenience init(dictionary: CompressionDictionary, limits: DecodeLimits = .default) throws {
        try self.init(coding: .dcb, dictionary: dictionary, limits: limits)
    }

    private init(coding: ContentCoding, dictionary: CompressionDictionary?, limits: DecodeLimits) throws {
        self.coding = coding
        self.dictionary = dictionary
        budget = OutputBudget(limit: limits.maxOutput)
        maxWindowLog = min(limits.effectiveMaxWindowLog(for: coding), Int(BROTLI_MAX_WINDOW_BITS))
        guard let state = BrotliDecoderCreateInstance(nil, nil, nil) else {
            throw CodecError.encoderFailure("BrotliDecoderCreateInstance failed")
        }
        self.state = state
        if let dictionary {
            let attached = dictionary.withUnsafeBytes {
                BrotliDecoderAttachDictionary(
                    state, BROTLI_SHARED_DICTIONARY_RAW, $0.count, $0.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            guard attached != 0 else {
                BrotliDecoderDestroyInstance(state)
                throw CodecError.encoderFailure("BrotliDecoderAttachDictionary failed")
            }
            header = DictionaryHeaderReader(coding: .dcb, dictionaryHash: dictionary.hash)
        }
    }

    deinit { BrotliDecoderDestroyInstance(state) }

    /// The window bits a brotli stream declares in its first byte (RFC 7932 §9.1), or nil for a
    /// large-window stream (RFC-incompatible extension).
    static func windowBits(firstByte b: UInt8) -> Int? {
        if b & 1 == 0 { return 16 }
        let n = Int((b >> 1) & 7)
        if n != 0 { return 17 + n }
        let m = Int((b >> 4) & 7)
        if m == 1 { return nil }  // large window
        return m == 0 ? 17 : 8 + m
    }

    public func update(_ input: UnsafeRawBufferPointer) throws -> [UInt8] {
        var input = input
        if header != nil, !header!.isComplete {
            let used = try header!.consume(input)
            input = UnsafeRawBufferPointer(rebasing: input[used...])
        }
        guard !input.isEmpty else { return [] }
        guard !streamComplete else { throw CodecError.trailingData }
        if !windowChecked {
            windowChecked = true
            guard let bits = Self.windowBits(firstByte: input[0]), bits <= maxWindowLog else {
                throw CodecError.windowTooLarge(maxWindowLog: maxWindowLog)
            }
        }
        var output: [UInt8] = []
        var availableIn = input.count
        var nextIn = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
        while true {
            var availableOut = staging.capacity
            var nextOut: UnsafeMutablePointer<UInt8>? = staging.base
            let result = BrotliDecoderDecompressStream(state, &availableIn, &nextIn, &availableOut, &nextOut, nil)
            let produced = staging.capacity - availableOut
            try budget.add(produced)
            staging.drain(produced, into: &output)
            switch result {
            case BROTLI_DECODER_RESULT_SUCCESS:
                streamComplete = true
                if availableIn > 0 { throw CodecError.trailingData }
                return output
            case BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT:
                continue
            case BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT:
                return output
            default:
                let code = BrotliDecoderGetErrorCode(state)
                if code == BROTLI_DECODER_ERROR_FORMAT_WINDOW_BITS {
                    throw CodecError.windowTooLarge(maxWindowLog: maxWindowLog)
                }
                if code == BROTLI_DECODER_ERROR_ALLOC_RING_BUFFER_1 || code == BROTLI_DECODER_ERROR_ALLOC_RING_BUFFER_2 {
                    throw CodecError.encoderFailure("brotli: out of memory")
                }
                throw CodecError.corrupt("brotli: " + String(cString: BrotliDecoderErrorString(code)))
            }
        }
    }

    public func finish() throws -> [UInt8] {
        if let header, !header.isComplete { throw CodecError.truncated }
        guard streamComplete else { throw CodecError.truncated }
        return []
    }
}
