import DictionaryCodecTypes
#if canImport(PortableZstd)
import PortableZstd
#endif

/// dcz and zstd through `PortableZstd`, the pure-Swift Zstandard decoder: the default decoder of a
/// ``DictionaryClient`` on every platform. Windows: zstd 8 MiB (RFC 9659), dcz max(8 MiB, 1.25 ×
/// dictionary) capped at 128 MiB (RFC 9842 §5), unless `limits.maxWindowLog` says otherwise.
/// Stateless; thread-safe.
public struct PortableZstdDecoder: ResponseDecoding {
    public init() {}

    #if canImport(PortableZstd)
    public var codings: [ContentCoding] { [.zstd, .dcz] }
    #else
    public var codings: [ContentCoding] { [] }
    #endif

    public func decode(
        _ body: [UInt8], coding: ContentCoding, dictionary: DictionaryBytes?, limits: DecodeLimits
    ) throws(CodecError) -> [UInt8] {
        let windowLog = limits.maxWindowLog
            ?? DecodeLimits.standardMaxWindowLog(for: coding, dictionarySize: dictionary?.count ?? 0)
        #if canImport(PortableZstd)
        let zstdLimits = ZstdDecodeLimits(maxOutputBytes: limits.maxOutput, maxWindowBytes: 1 << windowLog)
        switch coding {
        case .zstd:
            do throws(ZstdDecodeError) {
                return try PureZstd.decompress(body, limits: zstdLimits)
            } catch { throw Self.codecError(error, windowLog: windowLog) }
        case .dcz:
            guard let dictionary else { throw .dictionaryRequired(.dcz) }
            do throws(ZstdDecodeError) {
                return try PureDCZ.decode(body, dictionary: dictionary.bytes, dictionaryHash: dictionary.hash.bytes, limits: zstdLimits)
            } catch { throw Self.codecError(error, windowLog: windowLog) }
        default:
            throw .corrupt("PortableZstdDecoder does not decode \(coding)")
        }
        #else
        _ = windowLog
        throw .corrupt("PortableZstd is not part of this build")
        #endif
    }

    #if canImport(PortableZstd)
    /// The client's error for a PortableZstd one.
    static func codecError(_ error: ZstdDecodeError, windowLog: Int) -> CodecError {
        switch error {
        case .truncated: .truncated
        case .windowTooLarge: .windowTooLarge(maxWindowLog: windowLog)
        case .outputTooLarge(let limit): .outputLimitExceeded(limit: limit)
        case .badDCZMagic: .wrongMagic(expected: .dcz)
        default: .corrupt("\(error)")
        }
    }
    #endif
}
