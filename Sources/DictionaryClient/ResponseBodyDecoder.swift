import DictionaryCodecTypes
import HTTPFieldValues
import HTTPTypes

/// Removes a response's content codings (`Content-Encoding`, applied in order, so undone in reverse)
/// with the client's ``ResponseDecoders`` and RFC limits: dcz windows up to max(8 MiB, 1.25 ×
/// dictionary) capped at 128 MiB, dcb and br 16 MiB, zstd 8 MiB, and at most `maxOutput` decoded bytes.
///
/// A dcb/dcz body must name, in its 36/40-byte header, exactly the dictionary the request advertised:
/// anything else is a typed ``DictionaryClientError``. Pure; thread-safe.
public enum ResponseBodyDecoder {
    /// The codings listed in `Content-Encoding` (lower-case tokens, `identity` dropped), split at comma
    /// bytes, each field line on its own (a line starting with a combining mark is no part of the last).
    public static func codings(_ fields: HTTPFields) -> [String] {
        fields[values: .contentEncoding].flatMap { $0.fieldMembers(separatedBy: ",") }
            .map { $0.lowercased() }
            .filter { !$0.isEmpty && $0 != "identity" }
    }

    public static func decode(
        _ body: [UInt8], codings names: [String], advertised: DictionaryBytes?, decoders: ResponseDecoders, maxOutput: Int
    ) throws(DictionaryClientError) -> [UInt8] {
        var bytes = body
        for name in names.reversed() {
            guard let coding = ContentCoding(token: name), coding != .identity, let decoder = decoders.decoder(for: coding) else {
                throw .unsupportedContentCoding(name)
            }
            var dictionary: DictionaryBytes?
            if coding.usesDictionary {
                guard let advertised else { throw .dictionaryCodingWithoutDictionary(coding) }
                let header: DictionaryFrameHeader
                do {
                    header = try DictionaryFrameHeader.parse(bytes, expecting: coding)
                } catch CodecError.truncated {
                    throw .truncatedDictionaryHeader(coding)
                } catch {
                    // Either the wrong magic, or a strict prefix of it (a truncated header).
                    if bytes.count < DictionaryFrameHeader.length(of: coding) { throw .truncatedDictionaryHeader(coding) }
                    throw .wrongMagic(coding)
                }
                guard header.hash == advertised.hash else {
                    throw .dictionaryHashMismatch(coding: coding, advertised: advertised.hash, found: header.hash)
                }
                dictionary = advertised
            }
            do {
                bytes = try decoder.decode(bytes, coding: coding, dictionary: dictionary, limits: DecodeLimits(maxOutput: maxOutput))
            } catch {
                throw .decodeFailed(coding: coding, reason: error)
            }
        }
        return bytes
    }
}
