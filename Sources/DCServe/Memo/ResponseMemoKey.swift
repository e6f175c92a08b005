import DictionaryTransport
import HTTPServer
import HTTPTypes

/// Everything of a request that the compression middleware's answer depends on, apart from the inner
/// handler's response (``ResponseMemo`` checks that separately) and the middleware's own state.
///
/// - method (GET or HEAD; other methods are never memoised), authority and the full request target
///   (query included: the inner handler may read it);
/// - the values, in order, of every field negotiation reads: `Accept-Encoding`, `Available-Dictionary`,
///   `Dictionary-ID`, `Sec-Fetch-Site`, `Sec-Fetch-Mode`, `Sec-Fetch-Dest`, `Origin` (repeated lines
///   count: they make a field ambiguous);
/// - whether `Authorization` / `Cookie` lines are present (their values never enter a key).
///
/// Conditional fields (`If-None-Match`, `If-Modified-Since`) are not part of the key: they are
/// evaluated against the remembered response on every hit. `Range` requests never reach the memo.
/// Values are compared exactly (no normalisation), so two spellings of one preference are two keys.
/// A value type, `Sendable`.
struct ResponseMemoKey: Hashable, Sendable {
    let isHead: Bool
    let authority: String?
    let target: String
    /// The negotiation inputs: per field line a one-letter tag, the value, and a NUL.
    let negotiationFields: String

    /// Requests whose target and negotiation fields add up to more than this are not memoised
    /// (bounded memory per entry; ordinary browsers send a few hundred bytes).
    static let maximumBytes = 4096

    /// The key for `request`; nil when it must not be memoised (not GET/HEAD, no target, a `Range`
    /// field, or an oversized target and negotiation fields).
    init?(_ request: HTTPServerRequest) {
        let method = request.method
        guard method == .get || method == .head, let target = request.head.path else { return nil }
        let budget = Self.maximumBytes - target.utf8.count - (request.head.authority?.utf8.count ?? 0)
        guard budget >= 0 else { return nil }
        var fields = ""
        fields.reserveCapacity(128)
        for field in request.head.headerFields {
            let tag: String
            var includesValue = true
            switch field.name {
            case .acceptEncoding: tag = "a"
            case .availableDictionary: tag = "d"
            case .dictionaryID: tag = "i"
            case .secFetchSite: tag = "s"
            case .secFetchMode: tag = "m"
            case .secFetchDest: tag = "t"
            case .origin: tag = "o"
            case .authorization: tag = "A"; includesValue = false
            case .cookie: tag = "C"; includesValue = false
            case .range: return nil
            default: continue
            }
            fields += tag
            if includesValue { fields += field.value }
            fields += "\u{0}"
            guard fields.utf8.count <= budget else { return nil }
        }
        isHead = method == .head
        authority = request.head.authority
        self.target = target
        negotiationFields = fields
    }
}
