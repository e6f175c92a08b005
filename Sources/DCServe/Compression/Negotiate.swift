import DictionaryCodec
import DictionaryTransport
import HTTPServer
import HTTPTypes

/// The negotiation step: the coding for this request (dcb, dcz, br, zstd, gzip, identity).
extension DictionaryCompressionMiddleware {
    /// A failed dictionary lookup makes `effects` not replayable (the store may learn the hash later).
    func negotiate(_ request: HTTPServerRequest, _ responseFields: HTTPFields, resource: IdentityBody,
                   path: Substring, scope: DictionaryScope?, effects: inout ResponseEffects, partition: String = "",
                   refusal: DecisionReason? = nil) -> EncodingDecision {
        var codings = Set(settings.preference)
        // No rule covers the path, or the exchange's partition refuses dictionary transport.
        if scope == nil || refusal != nil { codings.subtract([.dcb, .dcz]) }
        var policy = NegotiationPolicy(codings: codings, minimumBodySize: settings.minimumBytes,
                                       allowsPrivateResponses: scope?.allowPrivate ?? false)
        policy.preference = settings.preference
        var sizes: [ContentCoding: Int] = [:]
        for coding in settings.preference where !coding.usesDictionary {
            sizes[coding] = variants.bestEntry(resource: resource.hash, dictionary: nil, coding: coding)?.bytes.count
        }
        let offeredValues = request.head.headerFields[values: .availableDictionary]
        let available = offeredValues.count == 1
            ? availableDictionaries.value(for: offeredValues[0]) { AvailableDictionary.parse(fieldValue: $0) }
            : AvailableDictionary.parse(request.head.headerFields)
        if let offered = available.value?.hash {
            for coding in [ContentCoding.dcz, .dcb] {
                sizes[coding] = variants.bestEntry(resource: resource.hash, dictionary: offered, coding: coding)?.bytes.count
            }
        }
        return Negotiation.decide(request: request.head.headerFields, path: String(path), response: responseFields,
                                  bodySize: resource.count, policy: policy, knownSizes: sizes,
                                  availableDictionary: available) { hash in
            // A history dictionary is found by (partition, hash, path) only: another
            // partition or group, or an expired build, is answered exactly like an unknown hash.
            if let history = self.history {
                switch history.index.verdict(hash, partition: partition, path: path, now: history.clock()) {
                case .notHistory: break
                case .allowed(let candidate, _):
                    effects.isReplayable = false
                    // Still held (retention may have removed it from the store since it was published):
                    // otherwise the client gets a plain coding, as for an unknown hash.
                    return self.dictionary(hash, partition: Self.storePartition(partition)) != nil ? candidate : nil
                case .refused:
                    effects.isReplayable = false
                    if let rule = self.rules.historyRule(for: path) { history.metrics.refused(rule: rule.name) }
                    return nil
                }
            }
            // A live version is found by (partition, hash) only: another partition's hash, or one past
            // the retention, is answered exactly like an unknown hash.
            let verdict = self.live.verdict(hash, partition: partition)
            switch verdict {
            case .notLive, .allowed: break
            case .otherPartition, .pastRetention:
                effects.isReplayable = false
                effects.liveRefusal = verdict == .otherPartition ? .partitionMismatch : .pastRetention
                if let rule = self.rules.advertisingRule(for: path), rule.isLive {
                    self.observer.live(rule: rule.name, verdict == .otherPartition ? .partitionMismatch : .pastRetention)
                }
                return nil
            }
            let found = self.dictionary(hash, partition: Self.storePartition(partition))?.candidate
            if found == nil { effects.isReplayable = false }
            return found
        }
    }
}
