import DictionaryCodecTypes

/// What one response cost and saved, for an app's own analytics. A value type, thread-safe; returned
/// with every ``ProcessedResponse``.
public struct ResponseMeasurement: Sendable, Hashable, CustomStringConvertible {
    /// Body bytes as the transport delivered them: content-coded, transfer coding removed (for a
    /// `Content-Length` response, that length).
    public var wireBytes: Int
    /// Body bytes after every content coding was undone.
    public var decodedBytes: Int
    /// `Content-Encoding` tokens, in the order the server applied them (empty for identity).
    public var contentCodings: [String]
    /// The dictionary the body was decoded with, or why none was.
    public var dictionary: DictionaryUse
    /// Time spent undoing the content codings (monotonic clock; zero for an identity body).
    public var decodeDuration: Duration

    public init(wireBytes: Int, decodedBytes: Int, contentCodings: [String], dictionary: DictionaryUse, decodeDuration: Duration) {
        self.wireBytes = wireBytes
        self.decodedBytes = decodedBytes
        self.contentCodings = contentCodings
        self.dictionary = dictionary
        self.decodeDuration = decodeDuration
    }

    /// `decodedBytes / wireBytes` (1 for an empty body).
    public var compressionRatio: Double { wireBytes == 0 ? 1 : Double(decodedBytes) / Double(wireBytes) }

    public var description: String {
        let codings = contentCodings.isEmpty ? "identity" : contentCodings.joined(separator: ", ")
        return "\(wireBytes) wire bytes → \(decodedBytes) decoded (\(codings)) in \(decodeDuration); \(dictionary)"
    }
}

/// Whether a response was decoded with a dictionary, and if not, why not.
public enum DictionaryUse: Sendable, Hashable, CustomStringConvertible {
    /// The body was dcb/dcz against this dictionary (the one the request named).
    case used(hash: DictionaryHash, id: String?)
    /// The request named a dictionary but the server answered without a dictionary coding.
    case notUsedByServer(offered: DictionaryHash)
    /// The request named no dictionary; `reason` says why (no match, insecure context, …).
    case notOffered(reason: String)

    public var hash: DictionaryHash? {
        if case .used(let hash, _) = self { return hash }
        return nil
    }

    public var description: String {
        switch self {
        case .used(let hash, let id): "dictionary \(hash.hex)" + (id.map { " (id \($0.debugDescription))" } ?? "")
        case .notUsedByServer(let offered): "dictionary \(offered.hex) offered, not used by the server"
        case .notOffered(let reason): reason
        }
    }
}
