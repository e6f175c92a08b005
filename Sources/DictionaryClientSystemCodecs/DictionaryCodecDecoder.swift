import DictionaryClient
import DictionaryCodec
import DictionaryTransportFields
import Locking

/// dcb, dcz, br, zstd and gzip through DictionaryCodec (libbrotli ≥ 1.1, libzstd, zlib): the decoder
/// to plug into a ``DictionaryClient`` where those libraries are present (Linux, servers,
/// `dcserve fetch`). Not part of the portable `DictionaryClient` product.
///
/// Thread-safe. Keeps the last dictionary's prepared form (a `CompressionDictionary`) so a series of
/// responses against one dictionary hashes and prepares it once.
public struct DictionaryCodecDecoder: ResponseDecoding {
    /// Shared by the decoder's copies.
    private final class LastDictionary: Sendable {
        let value = Locked<CompressionDictionary?>(nil)
    }
    private let lastDictionary = LastDictionary()

    public init() {}

    /// In the order `Accept-Encoding` offers them: `gzip, br, zstd` always, `dcb, dcz` with a dictionary.
    public var codings: [ContentCoding] { [.gzip, .br, .zstd, .dcb, .dcz] }

    public func decode(
        _ body: [UInt8], coding: ContentCoding, dictionary: DictionaryBytes?, limits: DecodeLimits
    ) throws(CodecError) -> [UInt8] {
        do {
            return try coding.decode(body, dictionary: dictionary.map(prepared), limits: limits)
        } catch let error as CodecError {
            throw error
        } catch {
            throw .corrupt("\(error)")
        }
    }

    private func prepared(_ dictionary: DictionaryBytes) -> CompressionDictionary {
        lastDictionary.value.withLock { last in
            if let last, last.hash == dictionary.hash, last.count == dictionary.count { return last }
            let made = CompressionDictionary(bytes: dictionary.bytes)
            last = made
            return made
        }
    }
}

extension ResponseDecoders {
    /// Every coding DictionaryCodec decodes (dcb, dcz, br, zstd, gzip) through the system libraries.
    public static var systemLibraries: ResponseDecoders { ResponseDecoders([DictionaryCodecDecoder()]) }
}
