@testable import DCServe
import Testing

/// Rules are matched on the path as sent only when it names what it says: a dot segment or an escaped
/// unreserved character, `/` or `\` makes the server behind resolve another resource than the one the
/// raw path matches, so no rule covers such a path (it is served without dictionaries).
@Suite struct DictionaryRulePathTests {
    let rules: DictionaryRuleSet

    init() throws {
        var chats = DictionaryRule(name: "chats", match: "/api/chats/:chat/*")
        chats.history = HistoryDictionarySettings()
        rules = try DictionaryRuleSet(rules: [DictionaryRule(name: "static", match: "/static/*"), chats], outOfBand: [])
    }

    @Test(arguments: ["/static/app.v2.js", "/static/caf%C3%A9.js", "/static/a%20b.js", "/static/..js", "/static/.well/x"])
    func aPathThatNamesWhatItSaysIsCovered(path: String) {
        #expect(rules.advertisingRule(for: path[...])?.name == "static")
        #expect(rules.dictionaryScope(for: path[...]) != nil && rules.compressingRuleName(for: path[...]) == "static")
    }

    @Test(arguments: ["/static/../other/app.v2.js", "/static/./app.v2.js", "/static/x/..", "/static/%2e%2e/other/x",
                      "/static/a%2F..%2F..%2Fother/x", "/static/a%2f..%2fx", "/static/a%5C..%5Cx", "/static/%61pp.js",
                      "/static/bad%zz", "/static/end%4"])
    func aPathTheServerResolvesElsewhereIsCoveredByNoRule(path: String) {
        #expect(rules.advertisingRule(for: path[...]) == nil)
        #expect(rules.dictionaryScope(for: path[...]) == nil && rules.compressingRuleName(for: path[...]) == nil)
        #expect(rules.coveringRuleName(for: path[...]) == nil)
    }

    @Test func aChatPathWithDotSegmentsIsNoConversationsHistory() {
        #expect(rules.historyRule(for: "/api/chats/1/messages")?.name == "chats")
        #expect(rules.historyRule(for: "/api/chats/1/../2/messages") == nil)
        #expect(rules.historyRule(for: "/api/chats/1/%2e%2e/2/messages") == nil)
    }
}
