import DictionaryClient
import DictionaryClientSystemCodecs
import DictionaryCodec
import Foundation
import HTTPTypes
import Testing
import TestSupport

@Suite struct RegistrationTests {
    let clock = TestClock()

    @Test func validResponseRegistersWithTheHashOfTheDecodedBody() throws {
        let client = try memoryClient(clock)
        let plain = sampleText(1, count: 5000)
        let gz = try Gzip.encode(plain, level: 6)
        let request = try client.prepare(url: "https://example.com/static/app.v1.js")
        let response = try client.process(ClientResponse(status: 200, fields: fields(
            ("use-as-dictionary", #"match="/static/app.*.js", id="v1""#), ("cache-control", "max-age=60"),
            ("content-encoding", "gzip")), body: gz), for: request)
        let entry = try #require(response.registeredEntry)
        #expect(entry.hash == SHA256.hash(plain))
        #expect(entry.size == plain.count)
        #expect(entry.id == "v1")
        #expect(entry.origin == "https://example.com")
        #expect(entry.expiresAt == clock.now + 60)
        #expect(client.store.entries().count == 1)
    }

    @Test(arguments: [
        (#"match="/a/(x+)""#, "regexp"),
        (#"match="https://other.example/*""#, "origin"),
        (#"match="/a/*", type=compressed"#, "raw"),
        (#"match="/a/*", type="raw""#, "raw"),
        (#"match="/a/*", match-dest="script""#, "match-dest"),
        (#"match="/a/*", match-dest=("nonsense")"#, "no known destination"),
        ("match=\"/a/*\", id=\"\(String(repeating: "x", count: 1025))\"", "id"),
        (#"match-dest=("script")"#, "match"),
        (#"match="""#, "match"),
        ("not a dictionary ((", "valid structured-field"),
    ])
    func invalidUseAsDictionaryIsRejected(value: String, reasonContains: String) throws {
        let client = try memoryClient(clock)
        let r = try register(client, url: "https://example.com/a/dict", body: bytes("dictionary"), useAsDictionary: value)
        let reason = try #require(r.rejection)
        #expect(reason.contains(reasonContains), "\(reason)")
        #expect(client.store.entries().isEmpty)
    }

    @Test func idOfExactly1024CharactersIsAccepted() throws {
        let client = try memoryClient(clock)
        let id = String(repeating: "x", count: 1024)
        let r = try register(client, url: "https://example.com/a/d", body: bytes("d"), useAsDictionary: "match=\"/a/*\", id=\"\(id)\"")
        #expect(r.registeredEntry?.id == id)
    }

    @Test func unknownDestinationsAreDroppedKnownOnesKept() throws {
        let client = try memoryClient(clock)
        let r = try register(client, url: "https://example.com/a/d", body: bytes("d"),
                             useAsDictionary: #"match="/a/*", match-dest=("script" "bogus" "")"#)
        #expect(r.rejection == nil, "\(r.rejection ?? "")")
        #expect(r.registeredEntry?.matchDestinations == ["script", ""])
    }

    @Test func insecureOriginIsNotRegisteredButLoopbackIs() throws {
        let client = try memoryClient(clock)
        let remote = try register(client, url: "http://example.com/a/d", body: bytes("d"), useAsDictionary: #"match="/a/*""#)
        #expect(remote.rejection?.contains("secure context") == true)
        for url in ["http://127.0.0.1:8080/a/d", "http://localhost/a/d", "http://[::1]:9/a/d", "http://app.localhost/a/d"] {
            let local = try register(client, url: url, body: bytes("d"), useAsDictionary: #"match="/a/*""#)
            #expect(local.registeredEntry != nil, "\(url)")
        }
    }

    @Test func onlyStatus200Registers() throws {
        let client = try memoryClient(clock)
        let request = try client.prepare(url: "https://example.com/a/d")
        let r = try client.process(ClientResponse(status: 206, fields: fields(
            ("use-as-dictionary", #"match="/a/*""#), ("cache-control", "max-age=60")), body: bytes("d")), for: request)
        #expect(r.rejection?.contains("206") == true)
    }

    @Test func bodyOver100MiBIsRejected() throws {
        let client = try memoryClient(clock, limits: ClientStoreLimits(byteBudget: 1 << 30, partitionShare: 1))
        let big = [UInt8](repeating: 0x61, count: (100 << 20) + 1)
        let r = try register(client, url: "https://example.com/a/d", body: big, useAsDictionary: #"match="/a/*""#)
        #expect(r.rejection?.contains("exceeds") == true)
    }

    @Test func reRegisteringTheSameMatchAndDestinationsReplaces() throws {
        let client = try memoryClient(clock)
        try register(client, url: "https://example.com/a/v1", body: bytes("one"), useAsDictionary: #"match="/a/*""#)
        clock.advance(1)
        try register(client, url: "https://example.com/a/v2", body: bytes("two"), useAsDictionary: #"match="/a/*""#)
        #expect(client.store.entries().map(\.hash) == [SHA256.hash(bytes("two"))])
        try register(client, url: "https://example.com/a/v3", body: bytes("three"),
                     useAsDictionary: #"match="/a/*", match-dest=("script")"#)
        #expect(client.store.entries().count == 2)
    }

    @Test func relativeMatchResolvesAgainstTheDictionaryURL() throws {
        let client = try memoryClient(clock)
        try register(client, url: "https://example.com/static/app.v1.js", body: bytes("d"), useAsDictionary: #"match="app.*.js""#)
        #expect(try client.prepare(url: "https://example.com/static/app.v2.js").dictionary != nil)
        #expect(try client.prepare(url: "https://example.com/other/app.v2.js").dictionary == nil)
    }
}

@Suite struct LifetimeTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func lifetime(_ pairs: (String, String)..., ttl: Int? = nil) -> DictionaryLifetime.Outcome {
        var f = HTTPFields()
        for (n, v) in pairs { f.append(HTTPField(name: HTTPField.Name(n)!, value: v)) }
        return DictionaryLifetime.compute(fields: f, ttl: ttl, now: now)
    }

    func httpDate(_ d: Date) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return f.string(from: d)
    }

    @Test func maxAgeRegisters() { #expect(lifetime(("cache-control", "max-age=86400")) == .storable(seconds: 86400)) }

    /// Directives split at comma bytes: `,\u{0301}` is one Character, which hid `no-store`.
    @Test func cacheControlDirectivesSplitAtCommaBytes() {
        guard case .notStorable = lifetime(("cache-control", "no-store,\u{0301}x, max-age=60")) else { Issue.record("no-store stored"); return }
        #expect(lifetime(("cache-control", "max-age=60,\u{0301}x")) == .storable(seconds: 60))
        #expect(lifetime(("cache-control", "max-age = \"60\" , x")) == .storable(seconds: 60))
    }

    @Test func staleWhileRevalidateExtendsAndRescuesMaxAgeZero() {
        #expect(lifetime(("cache-control", "max-age=0, stale-while-revalidate=120")) == .storable(seconds: 120))
        #expect(lifetime(("cache-control", "max-age=60, stale-while-revalidate=40")) == .storable(seconds: 100))
    }

    @Test func ageIsSubtracted() {
        #expect(lifetime(("cache-control", "max-age=100"), ("age", "30")) == .storable(seconds: 70))
        #expect(lifetime(("cache-control", "max-age=100, stale-while-revalidate=50"), ("age", "120")) == .storable(seconds: 30))
        // The apparent age from Date counts when larger than Age.
        #expect(lifetime(("cache-control", "max-age=100"), ("age", "5"), ("date", httpDate(now - 40))) == .storable(seconds: 60))
    }

    @Test(arguments: [
        "max-age=0", "no-store, max-age=60", "no-cache, max-age=60", "max-age=60, must-revalidate",
        "private, no-cache=\"set-cookie\", max-age=60", "max-age=abc",
    ])
    func notStorable(_ cacheControl: String) {
        guard case .notStorable = lifetime(("cache-control", cacheControl)) else {
            Issue.record("\(cacheControl) should not be storable")
            return
        }
    }

    @Test func mustRevalidateWithStaleWhileRevalidateIsStorable() {
        #expect(lifetime(("cache-control", "max-age=10, must-revalidate, stale-while-revalidate=5")) == .storable(seconds: 15))
    }

    @Test func noFreshnessInformationIsNotStorable() {
        guard case .notStorable = lifetime(("content-type", "text/plain")) else { Issue.record("stored"); return }
        guard case .notStorable = lifetime(("age", "10"), ("cache-control", "max-age=10")) else { Issue.record("stale stored"); return }
    }

    @Test func expiresMinusDate() {
        #expect(lifetime(("expires", httpDate(now + 500)), ("date", httpDate(now))) == .storable(seconds: 500))
        guard case .notStorable = lifetime(("expires", "0")) else { Issue.record("invalid Expires stored"); return }
        // max-age wins over Expires.
        #expect(lifetime(("cache-control", "max-age=5"), ("expires", httpDate(now + 500))) == .storable(seconds: 5))
    }

    /// Found by the client-response fuzzer: Foundation's DateFormatter trapped ("Incorrect range") on
    /// this Date value; dates are now read by HTTPCore's byte parser and such a value is ignored.
    @Test func aDateWithNonASCIIBytesIsIgnoredNotATrap() {
        let date = String(decoding: Array("Sun, 06 Nov 1".utf8) + [0xDF] + Array(repeating: 0xAD, count: 25) + [0xCF, 0, 0, 0x11, 0xB8, 0xB2, 0x54], as: UTF8.self)
        #expect(lifetime(("cache-control", "max-age=60"), ("date", date)) == .storable(seconds: 60))
        guard case .notStorable = lifetime(("expires", date)) else { Issue.record("invalid Expires stored"); return }
        // The forms still read: IMF-fixdate with surrounding spaces; obsolete forms are not dates.
        #expect(lifetime(("expires", " " + httpDate(now + 90) + "\t"), ("date", httpDate(now))) == .storable(seconds: 90))
        guard case .notStorable = lifetime(("expires", "Sunday, 06-Nov-94 08:49:37 GMT")) else { Issue.record("rfc850 date read"); return }
    }

    @Test func ttlReplacesTheHTTPLifetimeButNotNoStore() {
        #expect(lifetime(("cache-control", "max-age=0"), ttl: 300) == .storable(seconds: 300))
        guard case .notStorable = lifetime(("cache-control", "no-store"), ttl: 300) else { Issue.record("no-store stored"); return }
        guard case .notStorable = lifetime(("cache-control", "max-age=60"), ttl: 0) else { Issue.record("ttl=0 stored"); return }
    }

    @Test func ttlMemberIsReadFromUseAsDictionary() throws {
        let clock = TestClock()
        let client = try memoryClient(clock)
        let r = try register(client, url: "https://example.com/a/d", body: bytes("d"),
                             useAsDictionary: #"match="/a/*", ttl=30"#, cacheControl: "max-age=0")
        #expect(r.registeredEntry?.expiresAt == clock.now + 30)
    }
}
