import DictionaryCodec
import HTTPCore
import HTTPTypes

/// The whole encoding decision for one response, as the dictionary middleware calls it.
///
/// Pure apart from the `lookup` closure, which is called at most once, only when every cheaper check
/// passed (so a hostile `Available-Dictionary` costs no store access unless it is well-formed, the
/// gate allows and the response is not private). Thread-safe if `lookup` is.
public enum Negotiation {
    /// Decides how to encode a response.
    ///
    /// Order of checks: an existing `Content-Encoding` is kept; tiny bodies and precompressed media
    /// types go out as identity (another coding only when identity is refused); then the dictionary
    /// path — dcb/dcz allowed by policy and listed by the client, one valid `Available-Dictionary`,
    /// a valid or absent `Dictionary-ID`, no privacy concern (unless the policy allows), the §9.3.3
    /// gate, a stored dictionary with that hash whose `match` covers `path` and whose `match-dest`
    /// allows `Sec-Fetch-Dest` — and finally ``CodingChoice/choose(_:accept:)`` over everything
    /// still possible.
    ///
    /// - Parameters:
    ///   - request: request fields.
    ///   - path: the percent-encoded request path (query ignored).
    ///   - response: response fields (Content-Encoding, Content-Type, Set-Cookie, Cache-Control,
    ///     Access-Control-Allow-Origin are read).
    ///   - bodySize: the identity body size in bytes.
    ///   - policy: the resource's rule.
    ///   - knownSizes: sizes of already-encoded variants (for dcb/dcz: against the named dictionary).
    ///   - availableDictionary: `AvailableDictionary.parse(request)` when the caller already has it
    ///     (e.g. memoised per field value); parsed here when nil.
    ///   - lookup: finds a stored, verified dictionary by hash; nil when unknown.
    public static func decide(
        request: HTTPFields,
        path: String,
        response: HTTPFields,
        bodySize: Int,
        policy: NegotiationPolicy,
        knownSizes: [ContentCoding: Int] = [:],
        availableDictionary: AvailableDictionary.Parsed? = nil,
        lookup: (DictionaryHash) -> DictionaryCandidate?
    ) -> EncodingDecision {
        let accept = AcceptEncoding(request)
        func candidate(_ c: ContentCoding) -> CodingChoice.Candidate {
            CodingChoice.Candidate(c, size: c == .identity ? bodySize : knownSizes[c])
        }
        let plainCodings = CodingChoice.preferenceOrder.filter { !$0.usesDictionary && ($0 == .identity || policy.codings.contains($0)) }

        if let existing = response[.contentEncoding], existing.trimmingOWS().lowercased() != "identity" {
            return .plain(.identity, reason: .alreadyEncoded)
        }

        func plain(_ reason: EncodingDecision.PlainReason, codings: [ContentCoding]) -> EncodingDecision {
            switch CodingChoice.choose(codings.map(candidate), accept: accept, preference: policy.preference) {
            case .coding(let c): return .plain(c, reason: reason)
            case .notAcceptable: return .notAcceptable
            }
        }
        func uncompressed(_ reason: EncodingDecision.PlainReason) -> EncodingDecision {
            accept.accepts(.identity) ? .plain(.identity, reason: reason) : plain(reason, codings: plainCodings)
        }

        if bodySize < policy.minimumBodySize { return uncompressed(.bodyTooSmall) }
        if CompressionEligibility.isPrecompressed(contentType: response[.contentType]) {
            return uncompressed(.precompressedMediaType)
        }

        let available = availableDictionary ?? AvailableDictionary.parse(request)
        let dictionaryCodings = [ContentCoding.dcz, .dcb].filter { policy.codings.contains($0) && accept.accepts($0) }
        let refusal: EncodingDecision.PlainReason? = {
            guard case .present = available else {
                if case .rejected = available { return .invalidAvailableDictionary }
                return .noDictionaryOffered
            }
            if !policy.codings.contains(.dcb) && !policy.codings.contains(.dcz) { return .dictionaryCodingsDisabled }
            if dictionaryCodings.isEmpty { return .dictionaryCodingNotAccepted }
            if case .rejected = DictionaryID.parse(request) { return .invalidDictionaryID }
            if !policy.allowsPrivateResponses,
               let concern = CompressionEligibility.privacyConcern(request: request, response: response) {
                return concern == .credentialedRequest ? .credentialedRequest : .privateResponse
            }
            if !CrossOriginGate.allowsDictionaryCompression(request: request, response: response) { return .gateRefused }
            return nil
        }()
        if let refusal { return plain(refusal, codings: plainCodings) }

        guard let hash = available.value?.hash, let stored = lookup(hash), stored.hash == hash else {
            return plain(.unknownHash, codings: plainCodings)
        }
        guard stored.pattern.matches(path: path) else { return plain(.patternMismatch, codings: plainCodings) }
        let destination: String? = {
            if case .one(let d) = SingleFieldValue(.secFetchDest, in: request) { return String(d.trimmingOWS()) }
            return nil
        }()
        let destinations = UseAsDictionary(match: stored.pattern.source, matchDestinations: stored.matchDestinations)
        guard destinations.allows(destination: destination) else { return plain(.destinationMismatch, codings: plainCodings) }

        switch CodingChoice.choose((dictionaryCodings + plainCodings).map(candidate), accept: accept, preference: policy.preference) {
        case .coding(let c) where c.usesDictionary:
            // A delta measured no smaller than a plain coding the client accepts saves nothing: the plain
            // one is sent (e.g. a dictionary too far from the resource).
            if let deltaSize = knownSizes[c],
               let plain = plainCodings.compactMap({ p -> (ContentCoding, Int)? in
                   guard accept.accepts(p), let size = p == .identity ? bodySize : knownSizes[p] else { return nil }
                   return (p, size)
               }).min(by: { $0.1 < $1.1 }), plain.1 <= deltaSize {
                return .plain(plain.0, reason: .dictionaryCodingNotPreferred)
            }
            return .dictionary(c, hash)
        case .coding(let c): return .plain(c, reason: .dictionaryCodingNotPreferred)
        case .notAcceptable: return .notAcceptable
        }
    }

    /// dcserve's output depends on `Dictionary-ID` (a malformed or repeated one fails closed), so
    /// ``VaryField`` lists it by default.
    public static let dictionaryIDInfluencesChoice = true
}
