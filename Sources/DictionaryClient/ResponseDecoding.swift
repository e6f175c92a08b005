import DictionaryCodecTypes

/// Undoes content codings of a response body: the seam through which decoders are plugged into a
/// ``DictionaryClient``. The client advertises in `Accept-Encoding` exactly the codings its decoders
/// list (dcb/dcz only when a dictionary is named), so a response never needs a decoder it lacks.
///
/// Implementations in this package: ``PortableZstdDecoder`` (dcz and zstd, pure Swift, every
/// platform) and `DictionaryCodecDecoder` in `DictionaryClientSystemCodecs` (dcb, dcz, br, zstd,
/// gzip through libbrotli, libzstd and zlib; Linux and servers). Implementations must be thread-safe
/// and must report malformed or hostile input as a ``CodecError``, never trap.
public protocol ResponseDecoding: Sendable {
    /// The codings this decoder undoes, most preferred first.
    var codings: [ContentCoding] { get }

    /// Decodes `body`, coded with `coding` (one of ``codings``).
    ///
    /// - For dcb/dcz, `body` still starts with its 36/40-byte header, which the client has already
    ///   checked names `dictionary`; `dictionary` is nil for every other coding.
    /// - `limits.maxOutput` bounds the decoded size; `limits.maxWindowLog` (when set) bounds the
    ///   window, otherwise the coding's standard window applies
    ///   (`DecodeLimits.standardMaxWindowLog(for:dictionarySize:)`).
    func decode(
        _ body: [UInt8], coding: ContentCoding, dictionary: DictionaryBytes?, limits: DecodeLimits
    ) throws(CodecError) -> [UInt8]
}
