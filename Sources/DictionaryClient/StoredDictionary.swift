import DictionaryCodecTypes
import Foundation

/// What the client keeps about one registered dictionary (the bytes live in the store). Persisted as
/// JSON in the on-disk index. A value type, thread-safe.
public struct StoredDictionary: Codable, Hashable, Sendable {
    /// Caller-given partition (e.g. the signed-in account); dictionaries never cross partitions.
    public var partition: String
    /// `scheme://host[:port]` of the response that carried the dictionary.
    public var origin: String
    /// The URL the dictionary was fetched from (base of relative `match` patterns).
    public var sourceURL: String
    /// `match` as sent by the server.
    public var match: String
    /// Known destinations from `match-dest` (empty = every destination).
    public var matchDestinations: [String]
    /// `id` as sent (echoed in `Dictionary-ID`), nil when absent or empty.
    public var id: String?
    /// SHA-256 of the decoded body, 64 hex digits.
    public var hashHex: String
    public var size: Int
    public var fetchedAt: Date
    public var expiresAt: Date
    /// Last time the dictionary was named in a request (or registered): the LRU order.
    public var lastUsedAt: Date

    public init(
        partition: String, origin: String, sourceURL: String, match: String, matchDestinations: [String],
        id: String?, hashHex: String, size: Int, fetchedAt: Date, expiresAt: Date, lastUsedAt: Date
    ) {
        self.partition = partition
        self.origin = origin
        self.sourceURL = sourceURL
        self.match = match
        self.matchDestinations = matchDestinations
        self.id = id
        self.hashHex = hashHex
        self.size = size
        self.fetchedAt = fetchedAt
        self.expiresAt = expiresAt
        self.lastUsedAt = lastUsedAt
    }

    /// The hash (a malformed `hashHex` — only possible in a hand-edited index — reads as all zeros,
    /// which no body matches, so the entry is dropped on load).
    public var hash: DictionaryHash { DictionaryHash(hex: hashHex) ?? DictionaryHash(bytes: [UInt8](repeating: 0, count: 32))! }

    /// Re-registering the same (partition, origin, match, match-dest) replaces the entry (RFC 9842 §2.1).
    public var key: Key { Key(partition: partition, origin: origin, match: match, matchDestinations: matchDestinations) }

    public struct Key: Hashable, Sendable {
        public var partition: String
        public var origin: String
        public var match: String
        public var matchDestinations: [String]

        /// A file-name-safe digest of the key (SHA-256 hex).
        var fileName: String {
            let text = [partition, origin, match, matchDestinations.joined(separator: "\u{1}")].joined(separator: "\u{0}")
            return DictionaryBytes.sha256(Array(text.utf8)).hex
        }
    }

    public func isExpired(at now: Date) -> Bool { now >= expiresAt }
}
