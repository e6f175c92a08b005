import DictionaryCodecTypes

/// Why the client refused a request or dropped a response (RFC 9842 §9.3: a response that cannot be
/// decoded with the dictionary named is dropped, never retried silently, never passed on as garbage).
public enum DictionaryClientError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The URL is not an absolute http(s) URL the client can use.
    case invalidURL(String)
    /// `Content-Encoding` names a coding the client did not offer or cannot decode.
    case unsupportedContentCoding(String)
    /// A dcb/dcz response to a request that named no dictionary.
    case dictionaryCodingWithoutDictionary(ContentCoding)
    /// The dcb/dcz header names another dictionary than the one the request advertised.
    case dictionaryHashMismatch(coding: ContentCoding, advertised: DictionaryHash, found: DictionaryHash)
    /// The body is shorter than the 36-byte (dcb) or 40-byte (dcz) header.
    case truncatedDictionaryHeader(ContentCoding)
    /// The body does not start with the coding's magic bytes.
    case wrongMagic(ContentCoding)
    /// The decoder refused the body (corrupt, truncated, window or output limit exceeded).
    case decodeFailed(coding: ContentCoding, reason: CodecError)
    /// A stored dictionary's bytes no longer hash to its recorded hash (it is removed).
    case storedDictionaryCorrupt(expected: DictionaryHash)
    /// The store could not read or write its files.
    case storage(String)

    public var description: String {
        switch self {
        case .invalidURL(let url): "not an absolute http(s) URL: \(url)"
        case .unsupportedContentCoding(let coding): "unsupported Content-Encoding \(coding.debugDescription)"
        case .dictionaryCodingWithoutDictionary(let coding):
            "the response is \(coding)-encoded but the request advertised no dictionary"
        case .dictionaryHashMismatch(let coding, let advertised, let found):
            "\(coding) body made with dictionary \(found.hex), but the request advertised \(advertised.hex)"
        case .truncatedDictionaryHeader(let coding):
            "\(coding) body shorter than its \(DictionaryFrameHeader.length(of: coding))-byte header"
        case .wrongMagic(let coding): "\(coding) body does not start with the \(coding) magic bytes"
        case .decodeFailed(let coding, let reason): "\(coding) decoding failed: \(reason)"
        case .storedDictionaryCorrupt(let expected): "stored dictionary \(expected.hex) is corrupt (hash mismatch); removed"
        case .storage(let message): "dictionary store: \(message)"
        }
    }
}
