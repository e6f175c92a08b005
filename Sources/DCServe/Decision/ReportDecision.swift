import DictionaryCodec
import DictionaryTransport
import HTTPServer
import HTTPTypes

/// Reporting the decision: observer, access-log note, `DCServe-Decision`, the sizes saved.
extension DictionaryCompressionMiddleware {
    /// The decision for a response passed on without negotiation (`reason`), sent as it is.
    /// Unread (``reportsDecisions`` false): only the reason, without looking up the coding, the rule or the size.
    func passedDecision(_ request: HTTPServerRequest, _ response: HTTPServerResponse, _ reason: DecisionReason) -> ResponseDecision {
        guard reportsDecisions else { return ResponseDecision(.plain("identity", reason)) }
        let coding = response.headerValue(.contentEncoding) ?? "identity"
        let sent = response.body.knownLength.map(Int.init)
        return ResponseDecision(.plain(coding, reason), rule: rules.coveringRuleName(for: request.pathWithoutQuery),
                                identityBytes: coding == "identity" ? sent : nil, bestPlainBytes: sent,
                                bestPlainCoding: coding, sentBytes: sent)
    }

    /// Records `decision` for the response about to be sent (observer, access-log note) and adds the
    /// `DCServe-Decision` field when configured. Called once per response, after the memo and
    /// conditional evaluation: the field is never part of a memoised or cached head.
    func finish(_ request: HTTPServerRequest, _ out: inout HTTPServerResponse, _ decision: ResponseDecision) {
        if observesResponses {
            observer.responded(ResponseRecord(method: request.method.rawValue, path: String(request.pathWithoutQuery),
                                              status: out.statusCode, decision: decision))
        }
        if accessLogNotes { out.accessLogNote = DecisionLogNote(decision: decision) }
        if decisionHeader { out.head.headerFields[Self.decisionFieldName] = decision.fieldValue }
    }

    /// Reports the sizes of a dictionary-coded response together with what it would have weighed
    /// without dictionaries (the client's best plain coding), for the "saved by dictionaries" metric.
    /// When that plain variant is not cached yet it is encoded off the request path (and cached for
    /// later requests) and the sizes are reported when it is done; with the `DCServe-Decision` field
    /// on, it is encoded now (the field states the saving).
    /// Returns the best plain size and coding when known now (nil, nil when reported later).
    /// `refineLater: false` (live responses) does not encode the plain alternative of every response:
    /// it is estimated from a sample (``LivePlainSizeEstimate``), measured at the coding's cheapest
    /// level and never kept (each live version is new; a best-level encode of ~50 KB costs more CPU
    /// than the response itself).
    func reportWithPlainAlternative(_ request: HTTPServerRequest, _ responseFields: HTTPFields,
                                    resource: IdentityBody, path: Substring, sent: Int, rule: String?,
                                    refineLater: Bool = true, effects: inout ResponseEffects) -> (Int?, String?) {
        let identity = resource.count
        func report(_ bestPlain: Int) {
            effects.sizes = (identity, bestPlain, sent)
            observer.sizes(rule: rule, identity: identity, bestPlain: bestPlain, sent: sent)
        }
        guard case .plain(let coding, _) = negotiate(request, responseFields, resource: resource, path: path, scope: nil,
                                                     effects: &effects),
              coding != .identity else {
            report(identity)
            return (identity, "identity")
        }
        if let cached = variants.bestEntry(resource: resource.hash, dictionary: nil, coding: coding) {
            report(cached.bytes.count)
            return (cached.bytes.count, coding.rawValue)
        }
        effects.isReplayable = false
        // A live response's baseline at the coding's cheapest level, not kept: nobody else will ask
        // for this body.
        let measure: @Sendable () -> Int? = { [self] in
            var unrecorded = ResponseEffects()  // this response is not memoised: nothing to record
            return variant(of: resource, coding: coding, dictionary: nil, effects: &unrecorded,
                           refineLater: refineLater, cache: refineLater,
                           level: refineLater ? nil : coding.cheapestLevel)?.0.bytes.count
        }
        // A live response's baseline is estimated from a sample of the rule's responses (each one is
        // new: measuring it is a full encode, dearer than the delta sent).
        let estimateKey = LivePlainSizeEstimate.Key(rule: rule ?? "", coding: coding)
        let (estimated, due) = refineLater ? (nil, true) : livePlainSizes.estimate(estimateKey, identity: identity)
        if decisionHeader && estimated == nil {
            // The field states what the delta saved against the best plain coding, so that encode is
            // done now (the same work the background would do, on this response's thread).
            let measured = measure()
            if !refineLater { livePlainSizes.record(estimateKey, identity: identity, plain: measured) }
            let size = measured ?? identity
            report(size)
            return (size, coding.rawValue)
        }
        if let estimated { report(estimated) }
        guard due else { return (estimated, estimated.map { _ in coding.rawValue }) }
        compressionThreads.async {  // it may wait in SingleFlight: not on Dispatch's pool
            let size = measure()
            if !refineLater { self.livePlainSizes.record(estimateKey, identity: identity, plain: size) }
            if estimated == nil { self.observer.sizes(rule: rule, identity: identity, bestPlain: size ?? identity, sent: sent) }
        }
        return (estimated, estimated.map { _ in coding.rawValue })
    }
}
