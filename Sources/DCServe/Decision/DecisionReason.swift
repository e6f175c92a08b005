import DictionaryTransport

/// Why a response went out without a dictionary coding: every reason `Negotiation.decide` gives
/// (``EncodingDecision/PlainReason``) plus those decided around it by the compression middleware
/// (live-index refusals, pass-through cases). `rawValue` is the stable kebab-case label used in the
/// `DCServe-Decision` field, the access log, metrics and the live view.
public enum DecisionReason: String, Hashable, Sendable, CaseIterable {
    // From Negotiation.decide:
    case noDictionaryOffered = "no-dictionary-offered"
    case dictionaryCodingNotAccepted = "dictionary-coding-not-accepted"
    /// The path is in no rule's `compress` scope (and no out-of-band dictionary's `match`).
    case noRule = "no-rule"
    /// The configured `compression.preference` lists neither dcb nor dcz.
    case dictionaryCodingsDisabled = "dictionary-codings-disabled"
    case invalidAvailableDictionary = "invalid-available-dictionary"
    case invalidDictionaryID = "invalid-dictionary-id"
    case unknownDictionary = "unknown-dictionary"
    case patternMismatch = "match-mismatch"
    case destinationMismatch = "match-dest-mismatch"
    case gateRefused = "cross-origin-gate"
    case privateResponse = "private-response"
    case credentialedRequest = "credentialed-request"
    case precompressedMediaType = "precompressed-type"
    case bodyTooSmall = "body-too-small"
    case upstreamEncoded = "upstream-encoded"
    case dictionaryCodingNotPreferred = "dictionary-coding-not-preferred"
    // Live rules: the named version belongs to another partition / is past the retention.
    case partitionMismatch = "partition-mismatch"
    case pastRetention = "past-retention"
    /// The partition key appears more than once (``RequestPartition/ambiguous``): no dictionary transport.
    case ambiguousPartition = "ambiguous-partition"
    // Decided by the middleware before negotiating:
    /// `Cache-Control: no-transform`.
    case noTransform = "no-transform"
    /// Not a 200 (errors, redirects, 206, 304 from the inner handler).
    case notOK = "status"
    /// Not GET or HEAD.
    case method = "method"
    /// A `Range` request (answered as identity).
    case range = "range"
    /// A streamed body (too large to buffer): compressed on the fly with a plain coding, or passed.
    case streamed = "streamed"
    /// Larger than the middleware reads into memory.
    case tooLarge = "too-large"
    /// A HEAD answered by an upstream: there is no body to negotiate.
    case head = "head"
    /// The client accepts no coding the server offers, and nothing is advertised.
    case identityOnlyClient = "identity-only-client"
    /// The coding negotiated (plain, or a delta against the offered dictionary) came out no smaller
    /// than the body (incompressible bytes, a version sharing nothing with the dictionary), and the
    /// client accepts identity: the body was sent as it is.
    case noSaving = "no-saving"
    /// The body could not be read.
    case unreadable = "unreadable"
    /// Encoding failed (logged); identity was sent.
    case encodingFailed = "encoding-failed"

    /// `reason` from `Negotiation.decide` (the middleware refines it: ``noRule``, live refusals).
    public init(_ reason: EncodingDecision.PlainReason) {
        switch reason {
        case .noDictionaryOffered: self = .noDictionaryOffered
        case .dictionaryCodingNotAccepted: self = .dictionaryCodingNotAccepted
        case .dictionaryCodingsDisabled: self = .dictionaryCodingsDisabled
        case .invalidAvailableDictionary: self = .invalidAvailableDictionary
        case .invalidDictionaryID: self = .invalidDictionaryID
        case .unknownHash: self = .unknownDictionary
        case .patternMismatch: self = .patternMismatch
        case .destinationMismatch: self = .destinationMismatch
        case .gateRefused: self = .gateRefused
        case .privateResponse: self = .privateResponse
        case .credentialedRequest: self = .credentialedRequest
        case .precompressedMediaType: self = .precompressedMediaType
        case .bodyTooSmall: self = .bodyTooSmall
        case .alreadyEncoded: self = .upstreamEncoded
        case .dictionaryCodingNotPreferred: self = .dictionaryCodingNotPreferred
        }
    }

    /// The label a client may see (the `DCServe-Decision` field). A hash of another partition is
    /// shown exactly like an unknown one: telling the client it exists elsewhere would confirm a
    /// guess of another user's response. Operators see the precise reason (log, metrics, live view).
    public var clientLabel: String {
        self == .partitionMismatch ? DecisionReason.unknownDictionary.rawValue : rawValue
    }
}
