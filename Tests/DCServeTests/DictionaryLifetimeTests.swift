@testable import DCServe
import Testing

/// The `Cache-Control` an advertised response gets: by default a static file's is `max-age=<maxAge>`,
/// while a proxied response keeps the API's own value and is not advertised when that value forbids
/// use as a dictionary (an API's `no-cache` is never turned into a day of freshness unasked).
@Suite struct DictionaryLifetimeTests {
    func rule(_ lifetime: DictionaryLifetime? = nil) throws -> DictionaryRuleSet.Rule {
        var r = DictionaryRule(name: "news", match: "/latest_news")
        if let lifetime { r.lifetime = lifetime }
        return try #require(try DictionaryRuleSet(rules: [r], outOfBand: []).rules.first)
    }

    @Test func theDefaultKeepsAProxiedResponsesOwnFreshness() throws {
        let auto = try rule()
        #expect(auto.lifetime == .automatic)
        #expect(DictionaryCompressionMiddleware.lifetime(auto, upstream: nil, contentAddressed: true)! == ("max-age=86400", 86_400))
        #expect(DictionaryCompressionMiddleware.lifetime(auto, upstream: "no-cache", contentAddressed: true)! == ("max-age=86400", 86_400))
        #expect(DictionaryCompressionMiddleware.lifetime(auto, upstream: "no-cache", contentAddressed: false) == nil)
        #expect(DictionaryCompressionMiddleware.lifetime(auto, upstream: "private, no-cache", contentAddressed: false) == nil)
        #expect(DictionaryCompressionMiddleware.lifetime(auto, upstream: nil, contentAddressed: false) == nil)
        #expect(DictionaryCompressionMiddleware.lifetime(auto, upstream: "max-age=60", contentAddressed: false)! == ("max-age=60", 60))
    }

    @Test func anExplicitPolicyAppliesToEveryResponse() throws {
        #expect(DictionaryCompressionMiddleware.lifetime(try rule(.maxAge), upstream: "no-cache", contentAddressed: false)! == ("max-age=86400", 86_400))
        let swr = "max-age=0, stale-while-revalidate=86400"
        #expect(DictionaryCompressionMiddleware.lifetime(try rule(.cacheControl(swr)), upstream: "no-cache", contentAddressed: false)! == (swr, 86_400))
        #expect(DictionaryCompressionMiddleware.lifetime(try rule(.upstream), upstream: "no-cache", contentAddressed: true) == nil)
        #expect(DictionaryLifetime(configured: "auto") == .automatic && DictionaryLifetime(configured: "maxAge") == .maxAge)
    }
}
