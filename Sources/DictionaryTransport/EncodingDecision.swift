import DictionaryCodec

/// The outcome of negotiating one response: what to send and why (for logs and metrics).
public enum EncodingDecision: Hashable, Sendable, CustomStringConvertible {
    /// Compress with `coding` (dcb or dcz) against the stored dictionary `hash`.
    case dictionary(ContentCoding, DictionaryHash)
    /// Send with an ordinary coding (identity = leave the body as is) for `reason`.
    case plain(ContentCoding, reason: PlainReason)
    /// Nothing the server can produce is acceptable: answer 406.
    case notAcceptable

    /// Why no dictionary coding was used. `rawValue` is a stable label for metrics.
    public enum PlainReason: String, Hashable, Sendable, CaseIterable {
        /// The client named no dictionary (no `Available-Dictionary`).
        case noDictionaryOffered
        /// `Available-Dictionary` present but `dcb`/`dcz` not listed with q > 0.
        case dictionaryCodingNotAccepted
        /// The server may not produce dcb/dcz for this resource (policy).
        case dictionaryCodingsDisabled
        /// `Available-Dictionary` repeated, oversized or malformed (fail closed).
        case invalidAvailableDictionary
        /// `Dictionary-ID` repeated, oversized or malformed (fail closed).
        case invalidDictionaryID
        /// The store holds no (valid) dictionary with that hash.
        case unknownHash
        /// The stored dictionary's `match` does not cover the request path.
        case patternMismatch
        /// The request's `Sec-Fetch-Dest` is not in the dictionary's `match-dest`.
        case destinationMismatch
        /// The §9.3.3 cross-origin gate refused.
        case gateRefused
        /// The response sets cookies or is private/no-store.
        case privateResponse
        /// The request carries `Authorization` or `Cookie`.
        case credentialedRequest
        /// The media type is already compressed.
        case precompressedMediaType
        /// The body is smaller than the policy's threshold.
        case bodyTooSmall
        /// The response already has a `Content-Encoding`; leave it untouched.
        case alreadyEncoded
        /// A dictionary coding was possible but the client weighted another coding higher (or it was larger).
        case dictionaryCodingNotPreferred
    }

    public var description: String {
        switch self {
        case .dictionary(let c, let h): "\(c) with dictionary \(h.hex.prefix(12))"
        case .plain(let c, let r): "\(c) (\(r.rawValue))"
        case .notAcceptable: "not acceptable"
        }
    }
}
