/// Why encoding or decoding failed. Decoders report every malformed, hostile or mismatched input
/// with one of these cases; they never trap.
public enum CodecError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The body does not start with the dcb (`FF 44 43 42`) or dcz (`5E 2A 4D 18 20 00 00 00`) magic
    /// the decoder expects.
    case wrongMagic(expected: ContentCoding)
    /// The body's header names a different dictionary than the one given to the decoder.
    /// `expected` is the hash of the dictionary supplied, `found` the hash in the header.
    case dictionaryHashMismatch(expected: DictionaryHash, found: DictionaryHash)
    /// A dcb/dcz body was given to a decoder without a dictionary (or a dictionary coding was asked
    /// for without one).
    case dictionaryRequired(ContentCoding)
    /// The input ended before the header, frame or stream was complete.
    case truncated
    /// Bytes follow the end of the compressed frame/stream.
    case trailingData
    /// The stream declares a window larger than `2^maxWindowLog` bytes (the caller's limit, or the
    /// coding's standard one), or a large-window brotli stream.
    case windowTooLarge(maxWindowLog: Int)
    /// Decoding would produce more than `limit` bytes (decompression bomb guard).
    case outputLimitExceeded(limit: Int)
    /// The compressed data is invalid; the string is the library's reason.
    case corrupt(String)
    /// The compression library refused a parameter or ran out of memory.
    case encoderFailure(String)

    public var description: String {
        switch self {
        case .wrongMagic(let coding): "not a \(coding) body: wrong magic bytes"
        case .dictionaryHashMismatch(let expected, let found):
            "dictionary mismatch: the body was made with dictionary \(found.hex), but the dictionary given is \(expected.hex)"
        case .dictionaryRequired(let coding): "\(coding) needs a dictionary"
        case .truncated: "truncated input: the compressed data ends early"
        case .trailingData: "trailing data after the end of the compressed stream"
        case .windowTooLarge(let log): "window larger than the limit of 2^\(log) bytes"
        case .outputLimitExceeded(let limit): "decoded output exceeds the limit of \(limit) bytes"
        case .corrupt(let reason): "corrupt compressed data: \(reason)"
        case .encoderFailure(let reason): "encoder failure: \(reason)"
        }
    }
}
