@testable import DCServe
import HTTPClient
import HTTPCore
import HTTPTypes
import Testing

/// Proxy header semantics (RFC 9110 §7.6): what the upstream and the client each get to see.
@Suite struct ProxyHeadersTests {
    static let context = ProxyRequestHeaders.Context(clientAddress: "10.1.2.3:5555", scheme: "http",
                                                     protocolVersion: "1.1", upstreamAuthority: "127.0.0.1:8000")

    static func request(_ fields: [(String, String)], authority: String? = "site.example") -> HTTPRequest {
        var f = HTTPFields()
        for (n, v) in fields { f.append(HTTPField(name: HTTPField.Name(n)!, value: v)) }
        return HTTPRequest(method: .get, scheme: "http", authority: authority, path: "/api/x?y=1", headerFields: f)
    }

    static func names(_ fields: HTTPFields) -> [String] { fields.map { $0.name.canonicalName } }

    /// Fields the proxy adds itself (a client's `Connection` cannot make it drop them).
    static let added: Set<HTTPField.Name> = [HTTPField.Name("X-Forwarded-For")!, HTTPField.Name("X-Forwarded-Proto")!,
                                             HTTPField.Name("Forwarded")!, HTTPField.Name("Via")!, HTTPField.Name("X-Real-IP")!]

    @Test func hopByHopAndConnectionListedFieldsAreRemovedFromRequests() {
        let r = Self.request([("Connection", "keep-alive, X-Secret-Hop"), ("Connection", "Other"),
                              ("X-Secret-Hop", "1"), ("Other", "2"), ("Keep-Alive", "timeout=5"), ("TE", "trailers"),
                              ("Trailer", "X"), ("Transfer-Encoding", "chunked"), ("Upgrade", "h2c"),
                              ("Proxy-Authorization", "Basic x"), ("Proxy-Connection", "keep-alive"),
                              ("Content-Length", "5"), ("Expect", "100-continue"), ("Host", "site.example"),
                              ("Accept", "*/*"), ("X-End", "kept")])
        let out = ProxyRequestHeaders.make(r, context: Self.context, policy: ProxyHeaderPolicy())
        let names = Self.names(out.headerFields)
        for gone in ["connection", "x-secret-hop", "other", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade",
                     "proxy-authorization", "proxy-connection", "content-length", "expect", "host"] {
            #expect(!names.contains(gone), "\(gone) removed")
        }
        #expect(out.headerFields[.accept] == "*/*")
        #expect(out.headerFields[HTTPField.Name("X-End")!] == "kept")
        #expect(out.path == "/api/x?y=1" && out.method == .get)
    }

    @Test func forwardingFieldsAreAppendedToATrustedProxys() {
        let r = Self.request([("X-Forwarded-For", "192.0.2.1"), ("X-Forwarded-Proto", "https"), ("Via", "1.0 edge"),
                              ("Forwarded", "for=192.0.2.1"), ("X-Real-IP", "192.0.2.1")])
        var policy = ProxyHeaderPolicy()
        policy.forwarded = true
        var context = Self.context
        context.fromTrustedProxy = true
        let out = ProxyRequestHeaders.make(r, context: context, policy: policy)
        #expect(out.headerFields[values: HTTPField.Name("X-Forwarded-For")!] == ["192.0.2.1, 10.1.2.3"])
        #expect(out.headerFields[values: HTTPField.Name("X-Forwarded-Proto")!] == ["http"], "the client cannot choose it")
        #expect(out.headerFields[values: HTTPField.Name("Via")!] == ["1.0 edge, 1.1 dcserve"])
        #expect(out.headerFields[values: HTTPField.Name("Forwarded")!] == ["for=192.0.2.1, for=10.1.2.3;proto=http;host=site.example"])
        #expect(out.headerFields[values: HTTPField.Name("X-Real-IP")!] == ["192.0.2.1"], "the proxy saw the client")
    }

    /// A client's own `Forwarded` and `X-Real-IP` are claims, not hops: replaced by what dcserve saw.
    @Test func aClientsForwardedAndRealIPAreReplaced() {
        let r = Self.request([("Forwarded", "for=203.0.113.9;proto=https"), ("X-Real-IP", "203.0.113.9"),
                              ("Forwarded", "for=198.51.100.1"), ("X-Real-IP", "198.51.100.1")])
        var policy = ProxyHeaderPolicy()
        policy.forwarded = true
        let out = ProxyRequestHeaders.make(r, context: Self.context, policy: policy)
        #expect(out.headerFields[values: HTTPField.Name("Forwarded")!] == ["for=10.1.2.3;proto=http;host=site.example"])
        #expect(out.headerFields[values: HTTPField.Name("X-Real-IP")!] == ["10.1.2.3"])
        policy.forwardedFor = false
        let off = ProxyRequestHeaders.make(r, context: Self.context, policy: policy)
        #expect(off.headerFields[values: HTTPField.Name("X-Real-IP")!] == [], "never the client's")
        policy.forwarded = false
        let passed = ProxyRequestHeaders.make(r, context: Self.context, policy: policy)
        #expect(passed.headerFields[values: HTTPField.Name("Forwarded")!].count == 2, "not ours to set: end-to-end")
        #expect(passed.headerFields[values: HTTPField.Name("X-Real-IP")!] == [])
    }

    @Test func ipv6ClientsAndQuotedForwardedValues() {
        var policy = ProxyHeaderPolicy()
        policy.forwarded = true
        var context = Self.context
        context.clientAddress = "[2001:db8::1]:4000"
        let out = ProxyRequestHeaders.make(Self.request([], authority: "site.example:8080"), context: context, policy: policy)
        #expect(out.headerFields[HTTPField.Name("X-Forwarded-For")!] == "2001:db8::1")
        #expect(out.headerFields[HTTPField.Name("Forwarded")!] == "for=\"[2001:db8::1]\";proto=http;host=\"site.example:8080\"")
    }

    @Test func forwardingFieldsCanBeTurnedOff() {
        var policy = ProxyHeaderPolicy()
        policy.forwardedFor = false
        policy.forwardedProto = false
        policy.via = false
        let r = Self.request([("X-Forwarded-Proto", "https")])
        let out = ProxyRequestHeaders.make(r, context: Self.context, policy: policy)
        #expect(out.headerFields[HTTPField.Name("X-Forwarded-For")!] == nil)
        #expect(out.headerFields[HTTPField.Name("Via")!] == nil)
        #expect(out.headerFields[HTTPField.Name("Forwarded")!] == nil)
        #expect(out.headerFields[HTTPField.Name("X-Forwarded-Proto")!] == "https", "passed through when not ours to set")
    }

    @Test func hostIsKeptOrRewritten() {
        let r = Self.request([("Host", "site.example")])
        var policy = ProxyHeaderPolicy()
        #expect(ProxyRequestHeaders.make(r, context: Self.context, policy: policy).authority == "site.example")
        policy.host = .upstream
        #expect(ProxyRequestHeaders.make(r, context: Self.context, policy: policy).authority == "127.0.0.1:8000")
        policy.host = .fixed("api.internal")
        #expect(ProxyRequestHeaders.make(r, context: Self.context, policy: policy).authority == "api.internal")
        policy.host = .keep
        #expect(ProxyRequestHeaders.make(Self.request([], authority: nil), context: Self.context, policy: policy).authority
                == "127.0.0.1:8000", "an HTTP/1.0 request without Host gets the upstream's")
    }

    @Test func dictionaryFieldsAreWithheldUnlessTheUpstreamHandlesThem() {
        let r = Self.request([("Available-Dictionary", ":U5abz16WDg7b8KS93msLPpOB4Vbef1uRzoORYkJw9BY=:"),
                              ("Dictionary-ID", "\"v1\""), ("Accept-Encoding", "gzip, deflate, br, zstd, dcb, dcz")])
        var policy = ProxyHeaderPolicy()
        let out = ProxyRequestHeaders.make(r, context: Self.context, policy: policy)
        #expect(out.headerFields[.availableDictionary] == nil)
        #expect(out.headerFields[.dictionaryID] == nil)
        #expect(out.headerFields[values: .acceptEncoding] == ["gzip, br, zstd"])
        policy.upstreamHandlesDictionaries = true
        let through = ProxyRequestHeaders.make(r, context: Self.context, policy: policy)
        #expect(through.headerFields[.availableDictionary] != nil)
        #expect(through.headerFields[.dictionaryID] == "\"v1\"")
        #expect(through.headerFields[values: .acceptEncoding] == ["gzip, deflate, br, zstd, dcb, dcz"])
    }

    @Test(arguments: [
        ("gzip, deflate, br, zstd, dcb, dcz", "gzip, br, zstd"),
        ("br;q=0.5, gzip;q=0", "br"),
        ("deflate", "identity"),
        ("*", "gzip, br, zstd"),
        ("identity", "identity"),
        ("GZIP", "gzip"),
    ])
    func acceptEncodingIsLimitedToDecodableCodings(client: String, upstream: String) {
        let out = ProxyRequestHeaders.make(Self.request([("Accept-Encoding", client)]), context: Self.context,
                                           policy: ProxyHeaderPolicy())
        #expect(out.headerFields[values: .acceptEncoding] == [upstream])
    }

    @Test func noAcceptEncodingAsksForIdentity() {
        let out = ProxyRequestHeaders.make(Self.request([]), context: Self.context, policy: ProxyHeaderPolicy())
        #expect(out.headerFields[values: .acceptEncoding] == ["identity"])
    }

    @Test func responseHopByHopFieldsAreRemovedAndViaAdded() {
        let fields: HTTPFields = [
            .connection: "X-Private-Hop, keep-alive", HTTPField.Name("X-Private-Hop")!: "secret",
            HTTPField.Name("Keep-Alive")!: "timeout=5", .proxyAuthenticate: "Basic", .upgrade: "h2c",
            .transferEncoding: "chunked", .contentLength: "10", .eTag: "\"e\"", .date: "Mon, 23 Nov 2026 10:00:00 GMT",
            HTTPField.Name("X-End-To-End")!: "kept",
        ]
        let out = ProxyResponseHeaders.make(HTTPResponse(status: .ok, headerFields: fields), policy: ProxyHeaderPolicy())
        #expect(Self.names(out.headerFields) == ["etag", "date", "x-end-to-end", "via"])
        #expect(out.headerFields[HTTPField.Name("Via")!] == "1.1 dcserve")
    }

    @Test func hopByHopCheckWithoutHashingAgreesWithTheSet() {
        for name in HopByHopFields.names { #expect(HopByHopFields.isHopByHop(name), "\(name)") }
        for raw in ["Connection", "KEEP-ALIVE", "te", "Trailer", "Trailers", "TEE", "Upgrade-Insecure-Requests", "Via",
                    "Content-Length", "Content-Type", "Transfer-Encoding", "Proxy-Authenticate", "Proxy-Authorization",
                    "Proxy-Connection", "Proxy-Connections", "X-Keep-Alive", "Content-Lengths", "Host", "Age", "Date", "up"] {
            let name = HTTPField.Name(raw)!
            #expect(HopByHopFields.isHopByHop(name) == HopByHopFields.names.contains(name), "\(raw)")
            // The byte-level check the one-pass response head uses, on the name as received.
            let byBytes = Array(raw.utf8).withUnsafeBufferPointer { HopByHopFields.isHopByHop(nameBytes: $0) }
            #expect(byBytes == HopByHopFields.names.contains(name), "\(raw) as bytes")
        }
    }

    @Test func clientHostIsThePeerAddressWithoutItsPort() {
        #expect(ProxyRequestHeaders.clientHost("127.0.0.1:53122") == "127.0.0.1")
        #expect(ProxyRequestHeaders.clientHost("[::1]:53122") == "::1")
        #expect(ProxyRequestHeaders.clientHost("[2001:db8::7]:80") == "2001:db8::7")
        #expect(ProxyRequestHeaders.clientHost("2001:db8::7") == "2001:db8::7")  // several colons: no port to cut
        #expect(ProxyRequestHeaders.clientHost("unix") == "unix")
    }

    @Test func connectionListedBeyondTheHopByHopSet() {
        let fields: HTTPFields = [.connection: "keep-alive", HTTPField.Name("X-A")!: "1", .connection: " X-Private ,, Upgrade,te, Bad Token ,close"]
        #expect(HopByHopFields.extraConnectionListed(in: fields) == [HTTPField.Name("X-Private")!, HTTPField.Name("close")!])
        #expect(HopByHopFields.extraConnectionListed(in: [.connection: "Keep-Alive"]).isEmpty)
        #expect(HopByHopFields.extraConnectionListed(in: [.accept: "x"]).isEmpty)
        // The same as the full list minus the names removed anyway.
        #expect(HopByHopFields.extraConnectionListed(in: fields) == HopByHopFields.connectionListed(in: fields).subtracting(HopByHopFields.names))
    }

    /// Connection members are split at comma bytes: `,\u{0301}` is one Character, so `String.split`
    /// read `X-Secret,\u{0301}y` as one (invalid) name and X-Secret was forwarded.
    @Test func connectionMembersSplitAtCommaBytes() {
        let secret = HTTPField.Name("X-Secret")!
        let fields: HTTPFields = [.connection: "X-Secret,\u{0301}y", secret: "s", .accept: "a"]
        #expect(HopByHopFields.connectionListed(in: fields) == [secret])
        #expect(HopByHopFields.extraConnectionListed(in: fields) == [secret])
        #expect(HopByHopFields.removing(from: fields) == [.accept: "a"])
        #expect(HopByHopFields.connectionListed(in: [.connection: "close,\u{0301}, X-Secret"]) == [HTTPField.Name("close")!, secret])
    }

    /// The one-pass builder from the parsed head gives exactly the head the two-step path gives
    /// (parsed head → HTTPResponse → ProxyResponseHeaders.make): same fields, order, names as received,
    /// status and reason, with and without Via.
    @Test(arguments: [
        "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nETag: \"e\"\r\n\r\n",
        "HTTP/1.1 203 Fine Then\r\nconnection: X-Private-Hop, KEEP-ALIVE, close,, Bad Token\r\nX-PRIVATE-hop: s\r\nClose: c\r\nx-end: kept\r\nTransfer-Encoding: chunked\r\n\r\n",
        "HTTP/1.1 404 \r\nVia: 1.1 a\r\nvia: 1.0 b, 1.1 c\r\nTE: trailers\r\nTrailer: X\r\nUpgrade: h2c\r\nProxy-Authenticate: Basic\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.0 200 OK\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nX-Obs: caf\u{E9}\r\nProxy-Connection: keep-alive\r\nConnection: Upgrade, te\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nConnection: ,\tX-A\t ,\t, x-b,\r\nX-A: 1\r\nX-B: 2\r\nX-C: 3\r\nConnection: \r\nContent-Length: 0\r\n\r\n",
    ])
    func parsedHeadGivesTheSameHeadInOnePass(raw: String) throws {
        var parser = ResponseParser()
        let bytes = Array(raw.utf8)
        let (_, event) = try bytes.withUnsafeBytes { try parser.parse($0) }
        guard case .head(let head) = event else { Issue.record("no head"); return }
        var noVia = ProxyHeaderPolicy()
        noVia.via = false
        for policy in [ProxyHeaderPolicy(), noVia] {
            let onePass = ProxyResponseHeaders.make(head, policy: policy)
            let twoSteps = ProxyResponseHeaders.make(head.makeHTTPResponse(), policy: policy)
            #expect(onePass == twoSteps)
            #expect(onePass.status.reasonPhrase == twoSteps.status.reasonPhrase)
            #expect(onePass.headerFields.map(\.name.rawName) == twoSteps.headerFields.map(\.name.rawName))
        }
    }

    /// obs-text (a Latin-1 byte, not UTF-8) in a value: both forms keep the bytes as received, and
    /// agree (the fuzzer's upstream-response mode found them differing: the two-step form decoded the
    /// value as lossy UTF-8).
    @Test func obsTextValuesAreKeptByteForByteInBothForms() throws {
        var parser = ResponseParser()
        let bytes = Array("HTTP/1.1 200 OK\r\nContent-Disposition: attachment; filename=\"caf".utf8) + [0xE9]
            + Array(".txt\"\r\nX-Plain: café\r\nContent-Length: 0\r\n\r\n".utf8)
        let (_, event) = try bytes.withUnsafeBytes { try parser.parse($0) }
        guard case .head(let head) = event else { Issue.record("no head"); return }
        let onePass = ProxyResponseHeaders.make(head, policy: ProxyHeaderPolicy())
        #expect(onePass == ProxyResponseHeaders.make(head.makeHTTPResponse(), policy: ProxyHeaderPolicy()))
        let disposition = try #require(onePass.headerFields.first { $0.name == .contentDisposition })
        #expect(disposition.withUnsafeBytesOfValue { Array($0) }
                == Array("attachment; filename=\"caf".utf8) + [0xE9] + Array(".txt\"".utf8))
        #expect(onePass.headerFields[HTTPField.Name("X-Plain")!] == "café")
    }

    @Test func upstreamViaLinesAreJoinedBeforeOurs() {
        let fields: HTTPFields = [HTTPField.Name("Via")!: "1.1 a", .eTag: "\"e\"", HTTPField.Name("Via")!: "1.0 b, 1.1 c"]
        let out = ProxyResponseHeaders.make(HTTPResponse(status: .ok, headerFields: fields), policy: ProxyHeaderPolicy())
        #expect(out.headerFields[values: HTTPField.Name("Via")!] == ["1.1 a, 1.0 b, 1.1 c, 1.1 dcserve"])
        var policy = ProxyHeaderPolicy()
        policy.pseudonym = "edge-7"
        let renamed = ProxyResponseHeaders.make(HTTPResponse(status: .ok, headerFields: [:]), protocolVersion: "1.0", policy: policy)
        #expect(renamed.headerFields[values: HTTPField.Name("Via")!] == ["1.0 edge-7"])
        let renamed11 = ProxyRequestHeaders.make(Self.request([]), context: Self.context, policy: policy)
        #expect(renamed11.headerFields[values: HTTPField.Name("Via")!] == ["1.1 edge-7"])
    }

    @Test(arguments: [("text/event-stream", true), ("Text/Event-Stream; charset=utf-8", true), ("text/event-streams", true),
                      ("text/event", false), ("text/html", false), ("", false), ("application/json", false)])
    func eventStreamsAreRecognised(value: String, expected: Bool) {
        #expect(ProxyResponseRelay.isEventStream([.contentType: value]) == expected)
        #expect(ProxyResponseRelay.isEventStream([.contentType: value]) == value.lowercased().hasPrefix("text/event-stream"))
    }

    @Test(arguments: [("no-transform", true), ("max-age=60, No-Transform", true), ("public,no-transform=1", true),
                      ("max-age=60", false), ("x-no-transform", false), ("max-age=60,\u{0301}x, no-transform", true), ("no-transform,\u{0301}", true)])
    func noTransformIsRecognised(value: String, expected: Bool) {
        #expect(ProxyResponseHeaders.forbidsTransform([.cacheControl: value]) == expected)
    }
}
