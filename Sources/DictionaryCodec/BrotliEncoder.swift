import CBrotli

/// Streaming brotli compressor for `br` bodies and, given a dictionary, `dcb` bodies (36-byte header,
/// the dictionary's cached RAW `BrotliEncoderPreparedDictionary` attached as a raw prefix, quality
/// raised to at least 5 so brotli actually uses it). Window: lgwin 24 (16 MiB) for dcb, 22 for br;
/// never large-window mode. See `ContentEncoder` for the contract.
public final class BrotliEncoder: ContentEncoder {
    public let coding: ContentCoding
    private let state: OpaquePointer
    private let prepared: PreparedBrotliDictionary?
    private var pendingHeader: [UInt8]
    private let staging = OutputStaging(capacity: 128 * 1024)
    private var finished = false

    /// lgwin for dcb: RFC 9842 §4 allows at most 16 MiB (24), which also reaches furthest into the
    /// dictionary.
    public static let dcbWindowBits = 24
    /// lgwin for plain br: brotli's default.
    public static let brWindowBits = Int(BROTLI_DEFAULT_WINDOW)

    /// A plain `br` encoder at `quality` (0...11).
    public convenience init(quality: Int) throws {
        try self.init(coding: .br, quality: quality, dictionary: nil, inputSize: nil)
    }

    /// A `dcb` encoder with `dictionary` at `quality` (clamped to 5...11).
    public convenience init(dictionary: CompressionDictionary, quality: Int) throws {
        try self.init(coding: .dcb, quality: quality, dictionary: dictionary, inputSize: nil)
    }

    /// Whole inputs up to this size, encoded at quality 10 or 11, are encoded without literal context
    /// modeling: on small bodies its tables cost more than they save (PostgreSQL manual pages, 10
    /// random pairs, with a 32 KiB dictionary: 1 KiB −2.5 to −5 %, 4 KiB −1 %, 12 KiB −0.5 %, 16 KiB
    /// +0.2 to +0.6 %; short chat JSON against its history dictionary −5 %). Qualities below 10 are
    /// unaffected by the setting.
    static let smallInputBytes = 12 << 10

    /// Whether an encoder at `quality` for a whole input of `inputSize` bytes (nil: streamed, size
    /// unknown) turns literal context modeling off.
    static func disablesLiteralContextModeling(quality: Int, inputSize: Int?) -> Bool {
        guard let inputSize else { return false }
        return quality >= 10 && inputSize <= smallInputBytes
    }

    /// `literalContextModeling`: nil = the rule above; true/false forces it (tests compare both).
    init(coding: ContentCoding, quality: Int, dictionary: CompressionDictionary?, inputSize: Int?,
         literalContextModeling: Bool? = nil) throws {
        self.coding = coding
        guard let state = BrotliEncoderCreateInstance(nil, nil, nil) else {
            throw CodecError.encoderFailure("BrotliEncoderCreateInstance failed")
        }
        self.state = state
        let quality = coding.effectiveLevel(quality)
        let lgwin = coding == .dcb ? Self.dcbWindowBits : Self.brWindowBits
        var ok = BrotliEncoderSetParameter(state, BROTLI_PARAM_QUALITY, UInt32(quality)) != 0
        ok = ok && BrotliEncoderSetParameter(state, BROTLI_PARAM_LGWIN, UInt32(lgwin)) != 0
        ok = ok && BrotliEncoderSetParameter(state, BROTLI_PARAM_LARGE_WINDOW, 0) != 0
        if let inputSize {
            ok = ok && BrotliEncoderSetParameter(
                state, BROTLI_PARAM_SIZE_HINT, UInt32(clamping: inputSize)) != 0
        }
        if !(literalContextModeling ?? !Self.disablesLiteralContextModeling(quality: quality, inputSize: inputSize)) {
            ok = ok && BrotliEncoderSetParameter(state, BROTLI_PARAM_DISABLE_LITERAL_CONTEXT_MODELING, 1) != 0
        }
        if let dictionary {
            do {
                let prepared = try dictionary.preparedForBrotli(quality: quality)
                ok = ok && BrotliEncoderAttachPreparedDictionary(state, prepared.prepared) != 0
                self.prepared = prepared
            } catch {
                BrotliEncoderDestroyInstance(state)
                throw error
            }
            pendingHeader = DictionaryFrameHeader(coding: .dcb, hash: dictionary.hash).bytes
        } else {
            prepared = nil
            pendingHeader = []
        }
        guard ok else {
            BrotliEncoderDestroyInstance(state)
            throw CodecError.encoderFailure("brotli rejected a parameter or the dictionary")
        }
    }

    deinit { BrotliEncoderDestroyInstance(state) }

    public func update(_ input: UnsafeRawBufferPointer) throws -> [UInt8] {
        try compress(input, BROTLI_OPERATION_PROCESS)
    }

    public func flush() throws -> [UInt8] {
        try compress(UnsafeRawBufferPointer(start: nil, count: 0), BROTLI_OPERATION_FLUSH)
    }

    public func finish() throws -> [UInt8] {
        let out = try compress(UnsafeRawBufferPointer(start: nil, count: 0), BROTLI_OPERATION_FINISH)
        finished = true
        return out
    }

    private func compress(_ input: UnsafeRawBufferPointer, _ operation: BrotliEncoderOperation) throws -> [UInt8] {
        guard !finished else { throw CodecError.encoderFailure("encoder already finished") }
        var output = pendingHeader
        pendingHeader = []
        var availableIn = input.count
        var nextIn = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
        while true {
            var availableOut = staging.capacity
            var nextOut: UnsafeMutablePointer<UInt8>? = staging.base
            guard BrotliEncoderCompressStream(state, operation, &availableIn, &nextIn, &availableOut, &nextOut, nil) != 0
            else { throw CodecError.encoderFailure("BrotliEncoderCompressStream failed") }
            staging.drain(staging.capacity - availableOut, into: &output)
            let pending = BrotliEncoderHasMoreOutput(state) != 0
            switch operation {
            case BROTLI_OPERATION_FINISH:
                if BrotliEncoderIsFinished(state) != 0 { return output }
            default:
                if availableIn == 0 && !pending { return output }
            }
        }
    }

    /// One-shot: header + brotli stream written into a reusable scratch buffer of header +
    /// `BrotliEncoderMaxCompressedSize` bytes and copied out at its exact size (an array of that size
    /// when the bound exceeds the scratch buffers); spills into a second buffer only if brotli ever
    /// exceeds its own bound.
    func compressWhole(_ input: UnsafeRawBufferPointer) throws -> [UInt8] {
        let header = pendingHeader
        pendingHeader = []
        finished = true
        let maxBody = BrotliEncoderMaxCompressedSize(input.count)
        guard maxBody > 0 else {
            // Input too large for brotli's bound arithmetic: fall back to streaming.
            finished = false
            pendingHeader = header
            var out = try update(input)
            out += try finish()
            return out
        }
        var availableIn = input.count
        var nextIn = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let capacity = header.count + maxBody
        var complete = false
        /// Writes the header and as much of the stream as fits `capacity` bytes at `base`; returns the
        /// bytes written.
        func encodeFirst(into base: UnsafeMutablePointer<UInt8>) throws -> Int {
            header.withUnsafeBufferPointer { base.update(from: $0.baseAddress!, count: $0.count) }
            var availableOut = maxBody
            var nextOut: UnsafeMutablePointer<UInt8>? = base + header.count
            guard BrotliEncoderCompressStream(
                state, BROTLI_OPERATION_FINISH, &availableIn, &nextIn, &availableOut, &nextOut, nil) != 0
            else { throw CodecError.encoderFailure("BrotliEncoderCompressStream failed") }
            complete = BrotliEncoderIsFinished(state) != 0
            return capacity - availableOut
        }
        var output = try EncodeOutputScratch.shared.encodeExact(capacity: capacity) { try encodeFirst(into: $0) }
        while !complete {
            var availableOut = staging.capacity
            var nextOut: UnsafeMutablePointer<UInt8>? = staging.base
            guard BrotliEncoderCompressStream(
                state, BROTLI_OPERATION_FINISH, &availableIn, &nextIn, &availableOut, &nextOut, nil) != 0
            else { throw CodecError.encoderFailure("BrotliEncoderCompressStream failed") }
            staging.drain(staging.capacity - availableOut, into: &output)
            complete = BrotliEncoderIsFinished(state) != 0
        }
        return rightSized(output)
    }
}
