@testable import DCServe
import Testing

/// Which `Host` values the admin listener answers (DNS rebinding defence).
@Suite struct AdminHostCheckTests {
    @Test func loopbackNamesAndAddressesAreAnswered() {
        for host in ["localhost", "localhost:9090", "LocalHost.", "app.localhost:1", "127.0.0.1", "127.0.0.1:9090",
                     "[::1]", "[::1]:9090", "10.0.0.7:9090", "[2001:db8::1]:80"] {
            #expect(AdminHostCheck.accepts(host, allowed: []), "\(host)")
        }
    }

    @Test func otherNamesAreRefusedUnlessAllowed() {
        for host in ["evil.example", "evil.example:9090", "localhost.evil.example", "127.0.0.1.nip.io", "[::1", "a:b:c",
                     "127.0.0.1:x", "", ":9090", "[evil]:80"] {
            #expect(!AdminHostCheck.accepts(host, allowed: []), "\(host)")
        }
        let allowed = AdminHostCheck(allowedHosts: ["Metrics.Internal", "dcserve."]).allowedHosts
        #expect(AdminHostCheck.accepts("metrics.internal:9090", allowed: allowed))
        #expect(AdminHostCheck.accepts("DCSERVE", allowed: allowed))
        #expect(!AdminHostCheck.accepts("other.internal", allowed: allowed))
        #expect(AdminHostCheck.accepts("anything.example", allowed: ["*"]))
    }
}
