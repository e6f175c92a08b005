import DictionaryTransport
import HTTPServer
import HTTPTypes

/// Range requests: answered as identity by the inner handler, with the fields a 200 would carry.
extension DictionaryCompressionMiddleware {
    /// Range requests are answered by the inner handler as identity; the response still varies.
    func identityForRange(_ request: HTTPServerRequest, _ response: HTTPServerResponse) -> HTTPServerResponse {
        var out = response
        guard out.statusCode == 200 || out.statusCode == 206 else { return out }
        out.materializeHead()  // read and edited field by field below
        let path = request.pathWithoutQuery
        if rules.dictionaryScope(for: path) != nil {
            VaryField.addDictionaryNames(to: &out.head.headerFields)
        }
        // The Cache-Control a full 200 would get as an advertised dictionary: a 206 must carry it
        // (RFC 9110 §15.3.7), and a 200 that ignored the Range is the same representation.
        if let rule = rules.advertisingRule(for: path), Self.mayAdvertise(response, of: request, by: rule),
           let (cacheControl, _) = Self.lifetime(rule, upstream: out.head.headerFields[.cacheControl],
                                                contentAddressed: response.isContentAddressed) {
            out.head.headerFields[.cacheControl] = rule.partition == nil ? cacheControl : Self.privately(cacheControl)
        }
        // The same `private` a 200 to this request gets behind caches that ignore Vary.
        if sharedCaches == .ignoreVary, rules.dictionaryScope(for: path) != nil,
           request.head.headerFields[.availableDictionary] != nil {
            out.head.headerFields[.cacheControl] = Self.privately(out.head.headerFields[.cacheControl])
        }
        return out
    }
}
