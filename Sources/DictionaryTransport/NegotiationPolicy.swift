import DictionaryCodec

/// What the server is willing to do for a resource (from its rule in the configuration).
public struct NegotiationPolicy: Hashable, Sendable {
    /// Codings the server may produce for this resource; identity is always possible.
    public var codings: Set<ContentCoding>
    /// Bodies smaller than this (bytes) are sent as identity when identity is acceptable.
    public var minimumBodySize: Int
    /// Lets a rule explicitly allow dictionary compression of responses with cookies, private
    /// caching or credentialed requests. Off by default (RFC 9842 §9.2).
    public var allowsPrivateResponses: Bool
    /// Server preference among codings of equal client weight, best first (``CodingChoice/preferenceOrder`` by default).
    public var preference: [ContentCoding] = CodingChoice.preferenceOrder

    public init(codings: Set<ContentCoding> = Set(ContentCoding.allCases), minimumBodySize: Int = 128, allowsPrivateResponses: Bool = false) {
        self.codings = codings
        self.minimumBodySize = minimumBodySize
        self.allowsPrivateResponses = allowsPrivateResponses
    }
}

/// What the store knows about the dictionary a client named: enough to check it applies to the request.
public struct DictionaryCandidate: Hashable, Sendable {
    public var hash: DictionaryHash
    /// The dictionary's resolved `match` pattern.
    public var pattern: URLPattern
    /// The dictionary's `match-dest` (empty = all destinations).
    public var matchDestinations: [String]

    public init(hash: DictionaryHash, pattern: URLPattern, matchDestinations: [String] = []) {
        self.hash = hash
        self.pattern = pattern
        self.matchDestinations = matchDestinations
    }
}
