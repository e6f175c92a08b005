import DictionaryCodec
import Foundation

/// The metadata record stored next to each dictionary, one per (partition, hash) (`<hex>.json` shared,
/// `<hex>.<tag>.json` a partition's: ``DirectoryDictionaryStore``).
///
/// A value type. JSON keys are snake_case and stable; `format_version` lets later versions migrate.
public struct DictionaryMetadata: Codable, Hashable, Sendable {
    /// Version of this record's layout.
    public static let currentFormatVersion = 1

    public var formatVersion: Int
    /// Hex SHA-256 of the dictionary bytes (also the file name).
    public var hash: String
    /// `match` exactly as advertised in `Use-As-Dictionary`.
    public var match: String
    /// The resolved pathname pattern (``URLPattern/pathname``), matchable without the dictionary's URL.
    public var pathPattern: String
    /// `match-dest` as advertised (empty = all).
    public var matchDestinations: [String]
    /// `id` as advertised, if any.
    public var id: String?
    /// Name of the configuration rule that made this dictionary (per-rule retention), if any.
    public var rule: String?
    /// URL path (or file path) the dictionary was served from.
    public var sourcePath: String?
    public var firstServed: Date
    public var lastServed: Date
    /// `Cache-Control: max-age` the dictionary was served with, in seconds.
    public var maxAge: Int?
    /// When clients' copies go stale: `lastServed + maxAge` (nil when unknown: never expires by age).
    public var expires: Date?
    public var byteSize: Int
    /// The partition (HMAC id of one user's credential, never the credential) of a private rule's
    /// dictionary; nil = shared. A dictionary is usable only by requests of the same partition.
    public var partition: String? = nil

    enum CodingKeys: String, CodingKey {
        case formatVersion = "format_version", hash, match, pathPattern = "path_pattern"
        case matchDestinations = "match_dest", id, rule, sourcePath = "source_path"
        case firstServed = "first_served", lastServed = "last_served", maxAge = "max_age", expires
        case byteSize = "byte_size", partition
    }

    /// The record's pattern, ready for ``Negotiation``; nil if the stored pattern no longer parses.
    public var pattern: URLPattern? {
        // `pathPattern` was produced by URLPattern and starts with `/`, so no base URL is needed;
        // keep the advertised `match` as the source for logs.
        guard var p = try? URLPattern(pathPattern, base: nil) else { return nil }
        p = p.withSource(match)
        return p
    }

    /// The candidate ``Negotiation/decide`` needs, for the dictionary with this record.
    public func candidate(hash: DictionaryHash) -> DictionaryCandidate? {
        guard let pattern else { return nil }
        return DictionaryCandidate(hash: hash, pattern: pattern, matchDestinations: matchDestinations)
    }
}

/// What a caller says about a dictionary when storing it (from the response that advertised it).
public struct DictionaryDescription: Hashable, Sendable {
    /// The validated `match` pattern.
    public var pattern: URLPattern
    public var matchDestinations: [String]
    public var id: DictionaryID?
    public var rule: String?
    public var sourcePath: String?
    /// `Cache-Control: max-age` in seconds the dictionary is served with.
    public var maxAge: Int?
    /// The partition of a private rule's dictionary (see ``DictionaryMetadata/partition``).
    public var partition: String?

    public init(pattern: URLPattern, matchDestinations: [String] = [], id: DictionaryID? = nil, rule: String? = nil,
                sourcePath: String? = nil, maxAge: Int? = nil, partition: String? = nil) {
        self.partition = partition
        self.pattern = pattern
        self.matchDestinations = matchDestinations
        self.id = id
        self.rule = rule
        self.sourcePath = sourcePath
        self.maxAge = maxAge
    }
}

/// A dictionary loaded from a store: its bytes (verified against `hash` when loaded) and record.
///
/// Immutable value; the bytes array is shared copy-on-write, so handing it out costs no copy.
public struct StoredDictionary: Sendable {
    public let hash: DictionaryHash
    public let bytes: [UInt8]
    public let metadata: DictionaryMetadata

    public init(hash: DictionaryHash, bytes: [UInt8], metadata: DictionaryMetadata) {
        self.hash = hash
        self.bytes = bytes
        self.metadata = metadata
    }

    /// True when the stored `match` covers `path` (percent-encoded request path).
    public func covers(path: String) -> Bool { metadata.pattern?.matches(path: path) ?? false }
}
