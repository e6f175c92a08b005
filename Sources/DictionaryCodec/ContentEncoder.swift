/// A streaming compressor for one body: feed input chunks with `update`, end with `finish`. Each call
/// returns the compressed bytes that became ready (possibly none); the concatenation of all returned
/// chunks is the complete body, including the dcb/dcz header.
///
/// Thread-safety: an encoder instance is used by one task at a time (not `Sendable`); any number of
/// encoders may share one `CompressionDictionary` concurrently. After `finish` the encoder is spent:
/// further calls throw `CodecError.encoderFailure`.
public protocol ContentEncoder: AnyObject {
    /// The coding this encoder produces.
    var coding: ContentCoding { get }
    /// Compresses `input`; returns output that is ready now.
    func update(_ input: UnsafeRawBufferPointer) throws -> [UInt8]
    /// Flushes buffered input so everything fed so far is decodable by the peer (costs some ratio);
    /// useful for streamed responses.
    func flush() throws -> [UInt8]
    /// Ends the body and returns the remaining output.
    func finish() throws -> [UInt8]
}

/// A streaming decompressor for one body: feed compressed chunks with `update`, end with `finish`.
/// Returns decoded bytes as they become available. Errors are `CodecError`s: a dcb/dcz header naming
/// another dictionary fails as soon as the header is complete; trailing bytes after the end of the
/// stream, a window above `DecodeLimits.maxWindowLog` and output above `DecodeLimits.maxOutput` fail
/// as soon as they are seen; `finish` fails with `.truncated` when the stream is incomplete.
///
/// Thread-safety: one task at a time (not `Sendable`). After an error or `finish`, the decoder is spent.
public protocol ContentDecoder: AnyObject {
    var coding: ContentCoding { get }
    func update(_ input: UnsafeRawBufferPointer) throws -> [UInt8]
    func finish() throws -> [UInt8]
}

extension ContentEncoder {
    public func update(_ input: [UInt8]) throws -> [UInt8] { try input.withUnsafeBytes { try update($0) } }
    public func update(_ input: ArraySlice<UInt8>) throws -> [UInt8] { try input.withUnsafeBytes { try update($0) } }
}

extension ContentDecoder {
    public func update(_ input: [UInt8]) throws -> [UInt8] { try input.withUnsafeBytes { try update($0) } }
    public func update(_ input: ArraySlice<UInt8>) throws -> [UInt8] { try input.withUnsafeBytes { try update($0) } }
}

extension ContentCoding {
    /// A streaming encoder for this coding.
    /// - Parameters:
    ///   - dictionary: required for dcb/dcz (else `CodecError.dictionaryRequired`), ignored otherwise.
    ///   - level: clamped into `levelRange` (dcb is raised to at least 5).
    public func makeEncoder(dictionary: CompressionDictionary? = nil, level: Int) throws -> any ContentEncoder {
        switch self {
        case .dcz:
            guard let dictionary else { throw CodecError.dictionaryRequired(.dcz) }
            return try ZstdEncoder(dictionary: dictionary, level: level)
        case .zstd: return try ZstdEncoder(level: level)
        case .dcb:
            guard let dictionary else { throw CodecError.dictionaryRequired(.dcb) }
            return try BrotliEncoder(dictionary: dictionary, quality: level)
        case .br: return try BrotliEncoder(quality: level)
        case .gzip: return try GzipEncoder(level: level)
        case .identity: return IdentityCoder()
        }
    }

    /// A streaming decoder for this coding. dcb/dcz need the dictionary named in the body's header.
    public func makeDecoder(
        dictionary: CompressionDictionary? = nil, limits: DecodeLimits = .default
    ) throws -> any ContentDecoder {
        switch self {
        case .dcz:
            guard let dictionary else { throw CodecError.dictionaryRequired(.dcz) }
            return try ZstdDecoder(dictionary: dictionary, limits: limits)
        case .zstd: return try ZstdDecoder(limits: limits)
        case .dcb:
            guard let dictionary else { throw CodecError.dictionaryRequired(.dcb) }
            return try BrotliDecoder(dictionary: dictionary, limits: limits)
        case .br: return try BrotliDecoder(limits: limits)
        case .gzip: return try GzipDecoder(limits: limits)
        case .identity: return IdentityCoder(limits: limits)
        }
    }

    /// One-shot compression of a whole body (the fast path: compresses straight into a buffer sized by
    /// the library's bound).
    public func encode(
        _ input: [UInt8], dictionary: CompressionDictionary? = nil, level: Int
    ) throws -> [UInt8] {
        switch self {
        case .dcz:
            guard let dictionary else { throw CodecError.dictionaryRequired(.dcz) }
            return try DCZ.encode(input, dictionary: dictionary, level: level)
        case .zstd: return try Zstd.encode(input, level: level)
        case .dcb:
            guard let dictionary else { throw CodecError.dictionaryRequired(.dcb) }
            return try DCB.encode(input, dictionary: dictionary, level: level)
        case .br: return try Brotli.encode(input, level: level)
        case .gzip: return try Gzip.encode(input, level: level)
        case .identity: return input
        }
    }

    /// One-shot decompression of a whole body.
    public func decode(
        _ body: [UInt8], dictionary: CompressionDictionary? = nil, limits: DecodeLimits = .default
    ) throws -> [UInt8] {
        let decoder = try makeDecoder(dictionary: dictionary, limits: limits)
        var out = try decoder.update(body)
        out += try decoder.finish()
        return out
    }
}
