@testable import DCServe
import DictionaryTransport
import HTTPTypes
import Testing

/// The anonymous partition takes what a shared rule would: no credentials other than the key itself,
/// no private response, no cookie set.
@Suite struct AnonymousPartitionSafeguardTests {
    let cookieName = HTTPField.Name("Cookie")!

    @Test func credentialsOtherThanTheKeyKeepAnExchangeOut() {
        let byHeader = DictionaryPartitionSource.header("Authorization")
        let bySession = DictionaryPartitionSource.cookie("sid")
        #expect(AnonymousPartitionSafeguard.concern(request: [:], response: [:], key: byHeader) == nil)
        #expect(AnonymousPartitionSafeguard.concern(request: [.cookie: "theme=dark"], response: [:], key: byHeader) == .credentialedRequest)
        #expect(AnonymousPartitionSafeguard.concern(request: [.authorization: "Basic x"], response: [:], key: bySession) == .credentialedRequest)
        // The key itself (an empty one: that is why the exchange is anonymous) is no credential.
        #expect(AnonymousPartitionSafeguard.concern(request: [.authorization: ""], response: [:], key: byHeader) == nil)
        #expect(AnonymousPartitionSafeguard.concern(request: [.cookie: "sid="], response: [:], key: bySession) == nil)
        #expect(AnonymousPartitionSafeguard.concern(request: [.cookie: "sid=; theme=dark"], response: [:], key: bySession) == .credentialedRequest)
        #expect(AnonymousPartitionSafeguard.concern(request: [.cookie: "sid=", .authorization: "Bearer t"], response: [:], key: bySession)
                == .credentialedRequest)
    }

    @Test func privateResponsesKeepAnExchangeOut() {
        let key = DictionaryPartitionSource.header("Authorization")
        #expect(AnonymousPartitionSafeguard.concern(request: [:], response: [.cacheControl: "private, max-age=60"], key: key) == .privateCacheControl)
        #expect(AnonymousPartitionSafeguard.concern(request: [:], response: [.cacheControl: "no-store"], key: key) == .privateCacheControl)
        #expect(AnonymousPartitionSafeguard.concern(request: [:], response: [.setCookie: "a=b"], key: key) == .setCookie)
        #expect(AnonymousPartitionSafeguard.concern(request: [:], response: [.cacheControl: "max-age=60"], key: key) == nil)
    }
}
