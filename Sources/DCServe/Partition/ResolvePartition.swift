import DictionaryTransport
import HTTPServer
import HTTPTypes

/// The partition step: who the exchange belongs to, worked out once per exchange.
extension DictionaryCompressionMiddleware {
    /// For a path a private rule advertises or compresses: the request's partition (from the request,
    /// or from the upstream's header, which is removed here so the client never sees it) and
    /// `Cache-Control: private` on the response. An ambiguous key, or an anonymous exchange carrying
    /// credentials or a private response (``AnonymousPartitionSafeguard``), refuses dictionary
    /// transport for the exchange. Otherwise the response unchanged and the shared partition. Edits
    /// `out` in place.
    func partitioned(_ request: HTTPServerRequest, _ out: inout HTTPServerResponse) -> ExchangePartition {
        let path = request.pathWithoutQuery
        let live = rules.advertisingRule(for: path).flatMap { $0.isLive ? $0 : nil } ?? rules.liveCompressingRule(for: path)
        guard let rule = live ?? rules.historyRule(for: path), let source = rule.partition else { return .shared }
        out.materializeHead()  // read and edited field by field below
        var resolved = PartitionID.fromRequest(request.head.headerFields, source: source, secret: partitionSecret)
        if resolved == nil { resolved = PartitionID.fromResponse(&out.head.headerFields, source: source, secret: partitionSecret) }
        var partition = ExchangePartition(id: PartitionID.anonymous.value, refusal: nil)
        switch resolved ?? .anonymous {
        case .user(let id): partition.id = id.value
        case .ambiguous: partition.refusal = .ambiguousPartition
        case .anonymous:
            if !rule.allowsPrivateWhenAnonymous, let concern = AnonymousPartitionSafeguard.concern(
                request: request.head.headerFields, response: out.head.headerFields, key: source) {
                partition.refusal = AnonymousPartitionSafeguard.reason(concern)
            }
        }
        out.head.headerFields[.cacheControl] = Self.privately(out.head.headerFields[.cacheControl])
        // The response depends on who asks: a browser's cache shared by two accounts must not hand one
        // account's response (or its delta) to the other.
        switch source {
        case .header(let name): out.head.headerFields[.vary] = VaryField.merged(existing: out.head.headerFields[values: .vary], adding: [name])
        case .cookie: out.head.headerFields[.vary] = VaryField.merged(existing: out.head.headerFields[values: .vary], adding: ["Cookie"])
        case .upstreamHeader: break  // the upstream's own Vary says what its partition depends on
        }
        return partition
    }
}
