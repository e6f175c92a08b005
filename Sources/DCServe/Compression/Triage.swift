import DictionaryTransport
import HTTPServer
import HTTPTypes

/// The cheap first look at a response: pass it on, or read and negotiate it.
extension DictionaryCompressionMiddleware {
    /// What `process` does with a non-stream response, decided without reading its body: pass it
    /// (nearly) as it is, or read, hash and negotiate it (`work`, with what was looked up).
    enum Triage {
        /// Pass the response on, with `vary` applied to its head.
        case passThrough(conditional: Bool, replayable: Bool, reason: DecisionReason, vary: VaryEdit = .none)
        case work(advertising: DictionaryRuleSet.Rule?, scope: DictionaryScope?, compressible: Bool, path: Substring)
    }

    /// The `Vary` a passed response gets: the one every variant of a compressible resource carries.
    enum VaryEdit {
        case none
        /// One new `Vary: Accept-Encoding` line (the head has none, and no scope adds more).
        case appendAcceptEncoding
        /// ``addVary(to:scope:)``: merged into the head's `Vary`.
        case merge(scope: DictionaryScope?)
    }

    /// Applies `edit` to `response`'s head (a forwarded head stays forwarded for an appended line).
    func apply(_ edit: VaryEdit, to response: inout HTTPServerResponse) {
        switch edit {
        case .none: break
        case .appendAcceptEncoding: response.appendHeader(HTTPField(name: .vary, value: "Accept-Encoding"))
        case .merge(let scope): addVary(to: &response.head.headerFields, scope: scope)
        }
    }

    /// The cheap part of `process` (no body read): status, size, HEAD of a proxied resource,
    /// no-transform, nothing to advertise or compress, an identity-only client.
    func triage(_ request: HTTPServerRequest, _ response: HTTPServerResponse) -> Triage {
        guard response.statusCode == 200 else { return .passThrough(conditional: false, replayable: false, reason: .notOK) }
        guard let length = response.body.knownLength else {
            return .passThrough(conditional: false, replayable: false, reason: .streamed)
        }
        // The client's If-None-Match / If-Modified-Since may have been kept from the inner handler
        // (``forwardsConditions(_:)``): they are evaluated here on what passes (a file's or an
        // upstream's own validators), so a match still gets its 304.
        guard length <= Self.maximumBodyBytes else {
            return .passThrough(conditional: true, replayable: false, reason: .tooLarge)
        }
        if request.method == .head && !response.isContentAddressed && !answersHeadAsGet(request.pathWithoutQuery) {
            // A proxied HEAD has no body to store, hash or measure: its head passes as the upstream sent it.
            return .passThrough(conditional: true, replayable: false, reason: .head)
        }
        let fields = TriageFields(response)  // one pass over the head
        if fields.forbidsTransform {
            // Cache-Control: no-transform (RFC 9110 §7.7): no recoding, no dictionary, no storing.
            return .passThrough(conditional: true, replayable: true, reason: .noTransform)
        }
        let path = request.pathWithoutQuery
        let alreadyEncoded = fields.contentEncoding.map { $0.lowercased() != "identity" } ?? false
        // No identity, no dictionary: a body still in a coding (one the proxy could not decode: truncated,
        // over the decode cap, an unknown coding) is never advertised or stored.
        let advertising = alreadyEncoded ? nil : rules.advertisingRule(for: path)
        let scope = rules.dictionaryScope(for: path)
        let tooSmall = Int(length) < settings.minimumBytes
        let precompressed = fields.precompressed
        let compressible = !alreadyEncoded && !tooSmall && !precompressed
        guard advertising != nil || compressible else {
            let reason: DecisionReason = alreadyEncoded ? .upstreamEncoded : tooSmall ? .bodyTooSmall : .precompressedMediaType
            return .passThrough(conditional: true, replayable: true, reason: reason)
        }
        if advertising == nil, !AcceptEncoding(request.head.headerFields).acceptsAny(of: settings.preference) {
            // Identity-only client and nothing to advertise: the inner response as it is (no read, no
            // hash), with the Vary every variant of a compressible resource carries. Without a Vary
            // line and a scope, what addVary gives is one new line (no merge, no strings built).
            return .passThrough(conditional: true, replayable: true, reason: .identityOnlyClient,
                                vary: scope == nil && !fields.hasVary ? .appendAcceptEncoding : .merge(scope: scope))
        }
        return .work(advertising: advertising, scope: scope, compressible: compressible, path: path)
    }
}
