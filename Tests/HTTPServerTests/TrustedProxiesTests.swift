import HTTPTypes
import Testing
@testable import HTTPServer
import TestSupport

@Suite struct TrustedProxiesTests {
    @Test func addressesCompareAsBinary() throws {
        let proxies = try TrustedProxies(["10.0.0.1", "::1", "2001:db8::5"])
        #expect(proxies.trusts(remoteAddress: "10.0.0.1:5555"))
        #expect(proxies.trusts(remoteAddress: "[::ffff:10.0.0.1]:5555"))
        #expect(proxies.trusts(remoteAddress: "[0:0:0:0:0:0:0:1]:1"))
        #expect(proxies.trusts(remoteAddress: "[2001:0db8:0:0:0:0:0:5]:1"))
        #expect(!proxies.trusts(remoteAddress: "10.0.0.2:5555"))
        #expect(!proxies.trusts(remoteAddress: "garbage"))
        #expect(!TrustedProxies().trusts(remoteAddress: "10.0.0.1:1"))
        #expect(throws: TrustedProxies.InvalidAddress.self) { try TrustedProxies(["10.0.0.0/8"]) }
        #expect(throws: TrustedProxies.InvalidAddress.self) { try TrustedProxies(["proxy.example"]) }
    }

    @Test func forwardedSchemeParsing() {
        #expect(TrustedProxies.forwardedScheme(fields([("X-Forwarded-Proto", "https")])) == "https")
        #expect(TrustedProxies.forwardedScheme(fields([("X-Forwarded-Proto", "HTTPS")])) == "https")
        #expect(TrustedProxies.forwardedScheme(fields([("X-Forwarded-Proto", "http, https")])) == "https")
        #expect(TrustedProxies.forwardedScheme(fields([("X-Forwarded-Proto", "ftp")])) == nil)
        #expect(TrustedProxies.forwardedScheme(fields([("Forwarded", #"for=1.2.3.4;proto="https""#)])) == "https")
        #expect(TrustedProxies.forwardedScheme(fields([("Forwarded", "proto=https, for=1.2.3.4;proto=http")])) == "http")
        // Forwarded wins over X-Forwarded-Proto when it names a proto
        #expect(TrustedProxies.forwardedScheme(fields([("Forwarded", "proto=http"), ("X-Forwarded-Proto", "https")])) == "http")
        #expect(TrustedProxies.forwardedScheme(fields([("Forwarded", "for=1.2.3.4"), ("X-Forwarded-Proto", "https")])) == "https")
        #expect(TrustedProxies.forwardedScheme(fields([])) == nil)
        // Pairs split at `;` bytes: `;\u{0301}` is one Character, which glued the next pair to `https`.
        #expect(TrustedProxies.forwardedScheme(fields([("Forwarded", "for=1.2.3.4;proto=https;\u{0301}x=y")])) == "https")
        #expect(TrustedProxies.forwardedScheme(fields([("Forwarded", "proto=https,\u{0301}"), ("X-Forwarded-Proto", "http")])) == "http")
    }

    @Test func schemeOnlyFromTrustedProxies() throws {
        let proxies = try TrustedProxies(["127.0.0.2"])
        let https = fields([("X-Forwarded-Proto", "https")])
        #expect(proxies.scheme(secureConnection: false, remoteAddress: "127.0.0.2:1", fields: https) == "https")
        #expect(proxies.scheme(secureConnection: false, remoteAddress: "127.0.0.1:1", fields: https) == "http")
        #expect(proxies.scheme(secureConnection: true, remoteAddress: "127.0.0.1:1", fields: fields([])) == "https")
    }

    @Test func redirectHostRefusesInjection() {
        #expect(HTTPSRedirectHandler.hostWithoutPort("example.com:80") == "example.com")
        #expect(HTTPSRedirectHandler.hostWithoutPort("[::1]:8080") == "[::1]")
        #expect(HTTPSRedirectHandler.hostWithoutPort("localhost") == "localhost")
        #expect(HTTPSRedirectHandler.hostWithoutPort("evil.com/x") == nil)
        #expect(HTTPSRedirectHandler.hostWithoutPort("a b") == nil)
        #expect(HTTPSRedirectHandler.hostWithoutPort("") == nil)
        #expect(HTTPSRedirectHandler.hostWithoutPort(nil) == nil)
    }
}
