import DictionaryCodec
import DictionaryTransport
import HTTPTypes
import Testing
import TestSupport
import Locking

@Suite struct AcceptEncodingTests {
    @Test func chromiumDefaults() {
        let accept = AcceptEncoding(fieldValue: "gzip, deflate, br, zstd, dcb, dcz")
        for coding in ContentCoding.allCases { #expect(accept.accepts(coding), "\(coding)") }
    }

    @Test func qValuesAndCaseInsensitiveTokens() {
        let accept = AcceptEncoding(fieldValue: "GZIP;q=0.5, Br;Q=1.0, zstd;q=0, identity;q=0.001")
        #expect(accept.weight(of: .gzip) == 500)
        #expect(accept.weight(of: .br) == 1000)
        #expect(accept.weight(of: .zstd) == 0)
        #expect(accept.weight(of: .identity) == 1)
        #expect(accept.weight(of: .dcz) == 0)
    }

    @Test(arguments: ["q=2", "q=1.5", "q=0.1234", "q=abc", "q=", "q=-1", "q=.5", "q=1.01"])
    func malformedWeightsDropTheMember(q: String) {
        let accept = AcceptEncoding(fieldValue: "br;\(q), gzip")
        #expect(!accept.accepts(.br))
        #expect(accept.accepts(.gzip))
    }

    @Test func wildcardCoversUnlistedPlainCodingsButNotDictionaryCodings() {
        let accept = AcceptEncoding(fieldValue: "*;q=0.3, gzip")
        #expect(accept.weight(of: .br) == 300)
        #expect(accept.weight(of: .gzip) == 1000)
        #expect(!accept.accepts(.dcb))
        #expect(!accept.accepts(.dcz))
        #expect(accept.weight(of: .identity) == 300, "covered by `*`")
    }

    /// An unlisted identity ranks below every listed coding (nginx, jshttp/negotiator): a client
    /// giving every coding q < 1 still gets its best coding, not identity.
    @Test func unlistedIdentityRanksBelowEveryListedCoding() {
        let accept = AcceptEncoding(fieldValue: "br;q=0.9, gzip;q=0.8")
        #expect(accept.weight(of: .identity) == 800)
        #expect(AcceptEncoding(fieldValue: "gzip;q=0.5, zstd;q=0, x-custom;q=0.2").weight(of: .identity) == 200)
        #expect(AcceptEncoding(fieldValue: "gzip;q=0").weight(of: .identity) == 1000, "all the client accepts")
        #expect(AcceptEncoding(fieldValue: "gzip;q=0.5, identity;q=0.9").weight(of: .identity) == 900, "listed: as listed")
        typealias C = CodingChoice.Candidate
        #expect(CodingChoice.choose([C(.identity), C(.gzip), C(.br)], accept: accept) == .coding(.br))
        #expect(CodingChoice.choose([C(.identity), C(.gzip)], accept: accept) == .coding(.gzip))
        #expect(CodingChoice.choose([C(.identity), C(.zstd)], accept: accept) == .coding(.identity), "zstd not listed")
    }

    @Test func identityRefusal() {
        #expect(!AcceptEncoding(fieldValue: "gzip, identity;q=0").accepts(.identity))
        #expect(!AcceptEncoding(fieldValue: "*;q=0").accepts(.identity))
        #expect(AcceptEncoding(fieldValue: "*;q=0, identity").accepts(.identity))
        #expect(AcceptEncoding(fieldValue: "").accepts(.identity))
        #expect(!AcceptEncoding(fieldValue: "").accepts(.gzip))
    }

    @Test func absentFieldMeansIdentityOnly() {
        let accept = AcceptEncoding(HTTPFields())
        #expect(accept.accepts(.identity))
        #expect(!accept.accepts(.gzip))
        #expect(!accept.isPresent)
    }

    @Test func repeatedFieldLinesAreMergedAndDuplicatesTakeTheLowestWeight() {
        let accept = AcceptEncoding(fields(("accept-encoding", "gzip"), ("accept-encoding", "dcz, br;q=0.8"), ("Accept-Encoding", "br;q=0.2")))
        #expect(accept.accepts(.gzip))
        #expect(accept.accepts(.dcz))
        #expect(accept.weight(of: .br) == 200)
    }

    @Test func oversizedFieldsAreReadOnlyUpToTheBudgetAndNeverTruncatedIntoAnotherMeaning() {
        let padding = String(repeating: "x-pad, ", count: AcceptEncoding.maximumFieldLength / 7 - 1)
        let accept = AcceptEncoding(fieldValue: "gzip, " + padding + "br;q=0, zstd")  // a cut at 4096 bytes would leave `br`
        #expect(accept.accepts(.gzip))
        #expect(!accept.accepts(.br))
        #expect(!accept.accepts(.zstd))
    }

    @Test func unknownCodingsAndGarbageAreIgnored() {
        let accept = AcceptEncoding(fieldValue: " , x-custom, de flate, \"br\", gzip;foo=bar ,,")
        #expect(accept.accepts(.gzip))
        #expect(!accept.accepts(.br))
        #expect(accept.weights["x-custom"] == 1000)
    }

    /// Members and parameters are split at `,`/`;`/`=` bytes: `,\u{0301}` is one Character, so
    /// `String.split` read `br,\u{0301}x` as one invalid member and br was not accepted.
    @Test func membersAndParametersSplitAtSeparatorBytes() {
        #expect(AcceptEncoding(fieldValue: "br,\u{0301}x").accepts(.br))
        #expect(AcceptEncoding(fieldValue: "gzip;q=0,\u{0301}x, br").weights == ["gzip": 0, "br": 1000])
        #expect(AcceptEncoding(fieldValue: "br;q=0.5;\u{0301}x").weight(of: .br) == 500)
        #expect(AcceptEncoding(fieldValue: "br;q=\u{0301}1").weights.isEmpty)
        #expect(AcceptEncoding(fieldValue: "*;q=0,\u{0301}, gzip").wildcardWeight == 0)
    }
}

@Suite struct CodingChoiceTests {
    typealias C = CodingChoice.Candidate

    @Test func preferenceOrderWhenWeightsTie() {
        let accept = AcceptEncoding(fieldValue: "gzip, br, zstd, dcb, dcz")
        let all = ContentCoding.allCases.map { C($0) }
        #expect(CodingChoice.choose(all, accept: accept) == .coding(.dcz))
        #expect(CodingChoice.choose(all.filter { $0.coding != .dcz }, accept: accept) == .coding(.dcb))
        #expect(CodingChoice.choose([C(.gzip), C(.br), C(.identity)], accept: accept) == .coding(.br))
        #expect(CodingChoice.choose([C(.gzip), C(.identity)], accept: accept) == .coding(.gzip))
    }

    @Test func weightsComeFirst() {
        let accept = AcceptEncoding(fieldValue: "gzip;q=1, br;q=0.9, dcz;q=0.5")
        #expect(CodingChoice.choose([C(.dcz), C(.br), C(.gzip)], accept: accept) == .coding(.gzip))
    }

    @Test func smallerWinsWhenEverySizeIsKnown() {
        let accept = AcceptEncoding(fieldValue: "br, zstd, dcz, dcb")
        #expect(CodingChoice.choose([C(.dcz, size: 900), C(.dcb, size: 700), C(.br, size: 800)], accept: accept) == .coding(.dcb))
        // One size unknown: fall back to the preference order.
        #expect(CodingChoice.choose([C(.dcz), C(.dcb, size: 700), C(.br, size: 800)], accept: accept) == .coding(.dcz))
        // Equal sizes: preference order breaks the tie.
        #expect(CodingChoice.choose([C(.br, size: 10), C(.zstd, size: 10)], accept: accept) == .coding(.zstd))
    }

    @Test func notAcceptableOnlyWhenNothingIs() {
        #expect(CodingChoice.choose([C(.identity)], accept: AcceptEncoding(fieldValue: "identity;q=0")) == .notAcceptable)
        #expect(CodingChoice.choose([C(.identity), C(.gzip)], accept: AcceptEncoding(fieldValue: "identity;q=0, gzip")) == .coding(.gzip))
        #expect(CodingChoice.choose([C(.identity), C(.gzip)], accept: AcceptEncoding(fieldValue: "*;q=0")) == .notAcceptable)
    }
}

@Suite struct CrossOriginGateTests {
    @Test(arguments: [
        // (site, mode, origin, allow-origin, expected)
        (nil, nil, nil, nil, true),  // 1. no Sec-Fetch-Site
        ("same-origin", "cors", "https://a.example", nil, true),  // 2.
        ("cross-site", nil, nil, nil, true),  // 3. no Sec-Fetch-Mode
        ("cross-site", "navigate", nil, nil, true),  // 4.
        ("same-site", "same-origin", nil, nil, true),  // 4.
        ("cross-site", "cors", "https://a.example", "*", true),  // 5.
        ("cross-site", "cors", "https://a.example", "https://a.example", true),  // 5.
        ("cross-site", "cors", "https://a.example", "https://b.example", false),  // 5.
        ("cross-site", "cors", "https://a.example", nil, false),  // 5.
        ("cross-site", "cors", nil, "https://a.example", false),  // 5. no Origin
        ("cross-site", "no-cors", "https://a.example", "*", false),  // 6.
        ("same-site", "no-cors", nil, nil, false),  // 6.
        ("none", "websocket", nil, nil, false),  // 6.
    ] as [(String?, String?, String?, String?, Bool)])
    func gate(site: String?, mode: String?, origin: String?, allowOrigin: String?, expected: Bool) {
        var request = HTTPFields()
        if let site { request[.secFetchSite] = site }
        if let mode { request[.secFetchMode] = mode }
        if let origin { request[.origin] = origin }
        var response = HTTPFields()
        if let allowOrigin { response[.accessControlAllowOrigin] = allowOrigin }
        #expect(CrossOriginGate.allowsDictionaryCompression(request: request, response: response) == expected)
        #expect(CrossOriginGate.allowsDictionaryCompression(request: request, accessControlAllowOrigin: allowOrigin) == expected)
    }

    @Test func repeatedFetchMetadataFailsClosed() {
        #expect(!CrossOriginGate.allowsDictionaryCompression(
            request: fields(("sec-fetch-site", "same-origin"), ("sec-fetch-site", "cross-site")), response: HTTPFields()))
        #expect(!CrossOriginGate.allowsDictionaryCompression(
            request: fields(("sec-fetch-site", "cross-site"), ("sec-fetch-mode", "navigate"), ("sec-fetch-mode", "cors")), response: HTTPFields()))
        #expect(!CrossOriginGate.allowsDictionaryCompression(
            request: fields(("sec-fetch-site", "cross-site"), ("sec-fetch-mode", "cors"), ("origin", "https://a.example")),
            response: fields(("access-control-allow-origin", "*"), ("access-control-allow-origin", "*"))))
    }
}

@Suite struct EligibilityTests {
    @Test func privacyConcerns() {
        #expect(CompressionEligibility.privacyConcern(request: HTTPFields(), response: fields(("set-cookie", "a=b"))) == .setCookie)
        #expect(CompressionEligibility.privacyConcern(request: HTTPFields(), response: fields(("cache-control", "max-age=60, Private"))) == .privateCacheControl)
        #expect(CompressionEligibility.privacyConcern(request: HTTPFields(), response: fields(("cache-control", "no-store"))) == .privateCacheControl)
        #expect(CompressionEligibility.privacyConcern(request: HTTPFields(), response: fields(("cache-control", "public"), ("cache-control", "private=\"x\""))) == .privateCacheControl)
        #expect(CompressionEligibility.privacyConcern(request: fields(("authorization", "Bearer x")), response: HTTPFields()) == .credentialedRequest)
        #expect(CompressionEligibility.privacyConcern(request: fields(("cookie", "s=1")), response: HTTPFields()) == .credentialedRequest)
        #expect(CompressionEligibility.privacyConcern(request: HTTPFields(), response: fields(("cache-control", "public, max-age=86400"))) == nil)
        // Directives split at comma bytes: `,\u{0301}` is one Character, which hid `private`.
        #expect(CompressionEligibility.privacyConcern(request: HTTPFields(), response: fields(("cache-control", "max-age=60,\u{0301}x, private"))) == .privateCacheControl)
        #expect(CompressionEligibility.privacyConcern(request: HTTPFields(), response: fields(("cache-control", "private,\u{0301}"))) == .privateCacheControl)
    }

    @Test(arguments: [
        ("image/png", true), ("image/jpeg", true), ("image/webp", true), ("IMAGE/AVIF; q=1", true),
        ("image/svg+xml", false), ("video/mp4", true), ("audio/ogg", true), ("font/woff2", true), ("font/woff", true),
        ("font/ttf", false), ("application/zip", true), ("application/gzip", true), ("application/zstd", true),
        ("application/javascript", false), ("text/html; charset=utf-8", false), ("application/json", false),
        ("application/wasm", false), ("nonsense", false),
    ])
    func precompressedMediaTypes(type: String, expected: Bool) {
        #expect(CompressionEligibility.isPrecompressed(contentType: type) == expected)
    }
}

@Suite struct NegotiationDecisionTests {
    static let base = URLPatternBase(url: "https://example.com/static/app.v1.js")!
    static let stored = DictionaryCandidate(hash: referenceHash, pattern: try! URLPattern("/static/app.*.js", base: base))
    static let js = fields(("content-type", "text/javascript"), ("cache-control", "public, max-age=86400"))
    static let browser: [(String, String)] = [
        ("accept-encoding", "gzip, deflate, br, zstd, dcb, dcz"),
        ("available-dictionary", referenceAvailableDictionary),
    ]

    func request(_ extra: (String, String)..., base: [(String, String)] = browser) -> HTTPFields {
        var f = HTTPFields()
        for (n, v) in base + extra { f.append(HTTPField(name: HTTPField.Name(n)!, value: v)) }
        return f
    }

    func decide(_ request: HTTPFields, path: String = "/static/app.v2.js", response: HTTPFields = js, size: Int = 10_000,
                policy: NegotiationPolicy = NegotiationPolicy(), sizes: [ContentCoding: Int] = [:],
                known: DictionaryCandidate? = stored) -> EncodingDecision {
        Negotiation.decide(request: request, path: path, response: response, bodySize: size, policy: policy, knownSizes: sizes) { hash in
            known?.hash == hash ? known : nil
        }
    }

    @Test func browserWithKnownDictionaryGetsDcz() {
        #expect(decide(request()) == .dictionary(.dcz, referenceHash))
    }

    @Test func dcbWhenClientPrefersOrOnlyOffersIt() {
        #expect(decide(request(base: [("accept-encoding", "br, dcb"), ("available-dictionary", referenceAvailableDictionary)]))
            == .dictionary(.dcb, referenceHash))
        #expect(decide(request(base: [("accept-encoding", "dcz;q=0.5, dcb"), ("available-dictionary", referenceAvailableDictionary)]))
            == .dictionary(.dcb, referenceHash))
        #expect(decide(request(), policy: NegotiationPolicy(codings: [.dcb, .br, .gzip])) == .dictionary(.dcb, referenceHash))
        #expect(decide(request(), sizes: [.dcz: 500, .dcb: 400, .br: 900, .zstd: 950, .gzip: 1200]) == .dictionary(.dcb, referenceHash))
    }

    /// Chromium's `gzip, deflate, br, zstd, dcb, dcz` ties six codings, and the gzip size
    /// is never known; the known, smaller dcb must still beat the known, larger dcz.
    @Test func smallerKnownDictionaryCodingWinsWhateverElseTies() {
        #expect(decide(request(), sizes: [.dcz: 6_011, .dcb: 5_471]) == .dictionary(.dcb, referenceHash))
        #expect(decide(request(), sizes: [.dcz: 6_011, .dcb: 5_471, .br: 7_000]) == .dictionary(.dcb, referenceHash))
        #expect(decide(request(), sizes: [.dcz: 5_000, .dcb: 5_471]) == .dictionary(.dcz, referenceHash))
        // Equal sizes: preference decides.
        #expect(decide(request(), sizes: [.dcz: 5_471, .dcb: 5_471]) == .dictionary(.dcz, referenceHash))
        // Only one size known: no comparison, preference decides.
        #expect(decide(request(), sizes: [.dcb: 10]) == .dictionary(.dcz, referenceHash))
        #expect(decide(request(), sizes: [.dcz: 9_000]) == .dictionary(.dcz, referenceHash))
        // A client weighting dcz higher keeps dcz however small dcb is.
        #expect(decide(request(base: [("accept-encoding", "dcz, dcb;q=0.5"), ("available-dictionary", referenceAvailableDictionary)]),
                       sizes: [.dcz: 6_011, .dcb: 10]) == .dictionary(.dcz, referenceHash))
    }

    /// A delta measured no smaller than a plain coding the client accepts saves nothing: the plain one
    /// is sent (a dictionary far from the resource, a dcz window too small for it).
    @Test func aDeltaThatSavesNothingIsNotPreferred() {
        #expect(decide(request(), sizes: [.dcz: 5_000, .br: 3_000]) == .plain(.br, reason: .dictionaryCodingNotPreferred))
        #expect(decide(request(), sizes: [.dcz: 5_000, .dcb: 5_100, .zstd: 5_000]) == .plain(.zstd, reason: .dictionaryCodingNotPreferred))
        #expect(decide(request(), size: 4_000, sizes: [.dcz: 4_500]) == .plain(.identity, reason: .dictionaryCodingNotPreferred))
        // A plain coding the client does not accept is no alternative.
        #expect(decide(request(base: [("accept-encoding", "dcz"), ("available-dictionary", referenceAvailableDictionary)]),
                       size: 100_000, sizes: [.dcz: 5_000, .br: 3_000]) == .dictionary(.dcz, referenceHash))
        #expect(decide(request(), sizes: [.dcz: 2_999, .br: 3_000]) == .dictionary(.dcz, referenceHash))
    }

    /// The same for a plain answer: with `gzip, deflate, br, zstd` the gzip size is never known, yet a
    /// known, smaller br must beat a known, larger zstd (the server encodes both for a small body).
    @Test func smallerKnownOfZstdAndBrotliWinsWhateverElseTies() {
        let plain: [(String, String)] = [("accept-encoding", "gzip, deflate, br, zstd")]
        #expect(decide(request(base: plain), sizes: [.zstd: 192, .br: 142]) == .plain(.br, reason: .noDictionaryOffered))
        #expect(decide(request(base: plain), sizes: [.zstd: 130, .br: 142]) == .plain(.zstd, reason: .noDictionaryOffered))
        #expect(decide(request(base: plain), sizes: [.zstd: 142, .br: 142]) == .plain(.zstd, reason: .noDictionaryOffered))
        // Only one size known: preference decides.
        #expect(decide(request(base: plain), sizes: [.br: 10]) == .plain(.zstd, reason: .noDictionaryOffered))
        // Every tied size known (the server produces no deflate): the smallest of all.
        #expect(decide(request(base: plain), sizes: [.zstd: 192, .br: 300, .gzip: 100]) == .plain(.gzip, reason: .noDictionaryOffered))
        #expect(CodingChoice.comparedBySize(.dcb, .dcz) && CodingChoice.comparedBySize(.br, .zstd))
        #expect(!CodingChoice.comparedBySize(.br, .dcb) && !CodingChoice.comparedBySize(.gzip, .zstd))
    }

    @Test func unknownHashFallsBackToOrdinaryCoding() {
        #expect(decide(request(), known: nil) == .plain(.zstd, reason: .unknownHash))
        let other = DictionaryCandidate(hash: DictionaryHash(bytes: [UInt8](repeating: 1, count: 32))!, pattern: Self.stored.pattern)
        #expect(decide(request(), known: other) == .plain(.zstd, reason: .unknownHash))
    }

    @Test func missingOrBrokenAvailableDictionary() {
        #expect(decide(request(base: [("accept-encoding", "gzip, br, zstd, dcb, dcz")])) == .plain(.zstd, reason: .noDictionaryOffered))
        #expect(decide(request(base: [("accept-encoding", "gzip, br"), ("available-dictionary", ":AAAA:")]))
            == .plain(.br, reason: .invalidAvailableDictionary))
        #expect(decide(request(("available-dictionary", referenceAvailableDictionary))) == .plain(.zstd, reason: .invalidAvailableDictionary))
    }

    @Test func dictionaryIDMustBeWellFormedButNeverReplacesTheHash() {
        #expect(decide(request(("dictionary-id", "\"anything\""))) == .dictionary(.dcz, referenceHash))
        #expect(decide(request(("dictionary-id", "\"a\""), ("dictionary-id", "\"b\""))) == .plain(.zstd, reason: .invalidDictionaryID))
        #expect(decide(request(("dictionary-id", "token"))) == .plain(.zstd, reason: .invalidDictionaryID))
    }

    @Test func clientMustListADictionaryCoding() {
        // `*` enables zstd (preferred over br) but never a dictionary coding.
        #expect(decide(request(base: [("accept-encoding", "gzip, br, *"), ("available-dictionary", referenceAvailableDictionary)]))
            == .plain(.zstd, reason: .dictionaryCodingNotAccepted))
        #expect(decide(request(base: [("accept-encoding", "gzip, dcz;q=0, dcb;q=0"), ("available-dictionary", referenceAvailableDictionary)]))
            == .plain(.gzip, reason: .dictionaryCodingNotAccepted))
        #expect(decide(request(), policy: NegotiationPolicy(codings: [.br, .gzip])) == .plain(.br, reason: .dictionaryCodingsDisabled))
    }

    @Test func clientWeightingAnotherCodingHigher() {
        #expect(decide(request(base: [("accept-encoding", "br, dcz;q=0.1"), ("available-dictionary", referenceAvailableDictionary)]))
            == .plain(.br, reason: .dictionaryCodingNotPreferred))
    }

    @Test func storedMatchMustCoverThePath() {
        #expect(decide(request(), path: "/other/app.v2.js") == .plain(.zstd, reason: .patternMismatch))
        #expect(decide(request(), path: "/static/app.v2.js?cache=1") == .dictionary(.dcz, referenceHash))
    }

    @Test func matchDestIsHonoured() {
        let scripts = DictionaryCandidate(hash: referenceHash, pattern: Self.stored.pattern, matchDestinations: ["script"])
        #expect(decide(request(("sec-fetch-dest", "script")), known: scripts) == .dictionary(.dcz, referenceHash))
        #expect(decide(request(("sec-fetch-dest", "document")), known: scripts) == .plain(.zstd, reason: .destinationMismatch))
        #expect(decide(request(), known: scripts) == .dictionary(.dcz, referenceHash))
    }

    @Test func gateCases() {
        #expect(decide(request(("sec-fetch-site", "cross-site"), ("sec-fetch-mode", "no-cors"))) == .plain(.zstd, reason: .gateRefused))
        #expect(decide(request(("sec-fetch-site", "cross-site"), ("sec-fetch-mode", "cors"), ("origin", "https://a.example")))
            == .plain(.zstd, reason: .gateRefused))
        var corsResponse = Self.js
        corsResponse[.accessControlAllowOrigin] = "https://a.example"
        #expect(decide(request(("sec-fetch-site", "cross-site"), ("sec-fetch-mode", "cors"), ("origin", "https://a.example")), response: corsResponse)
            == .dictionary(.dcz, referenceHash))
        #expect(decide(request(("sec-fetch-site", "same-origin"), ("sec-fetch-mode", "no-cors"))) == .dictionary(.dcz, referenceHash))
        #expect(decide(request(("sec-fetch-site", "cross-site"), ("sec-fetch-mode", "navigate"))) == .dictionary(.dcz, referenceHash))
    }

    @Test func privateResponsesAndCredentialedRequests() {
        var withCookie = Self.js
        withCookie[.setCookie] = "session=1"
        #expect(decide(request(), response: withCookie) == .plain(.zstd, reason: .privateResponse))
        #expect(decide(request(), response: fields(("content-type", "text/javascript"), ("cache-control", "private, max-age=60"))) == .plain(.zstd, reason: .privateResponse))
        #expect(decide(request(), response: fields(("cache-control", "no-store"))) == .plain(.zstd, reason: .privateResponse))
        #expect(decide(request(("authorization", "Bearer t"))) == .plain(.zstd, reason: .credentialedRequest))
        #expect(decide(request(("cookie", "a=b"))) == .plain(.zstd, reason: .credentialedRequest))
        #expect(decide(request(("cookie", "a=b")), policy: NegotiationPolicy(allowsPrivateResponses: true)) == .dictionary(.dcz, referenceHash))
    }

    @Test func tinyAndPrecompressedBodiesStayIdentity() {
        #expect(decide(request(), size: 20) == .plain(.identity, reason: .bodyTooSmall))
        #expect(decide(request(), response: fields(("content-type", "image/png"))) == .plain(.identity, reason: .precompressedMediaType))
        // identity refused: the best other coding is used even for a tiny body.
        #expect(decide(request(base: [("accept-encoding", "gzip, identity;q=0")]), size: 20) == .plain(.gzip, reason: .bodyTooSmall))
        #expect(decide(request(base: [("accept-encoding", "identity;q=0")]), size: 20) == .notAcceptable)
    }

    /// Every coding with q < 1 and identity unlisted: the client's best coding, not identity.
    @Test func clientsWeightingEveryCodingBelowOneGetTheirBestCoding() {
        #expect(decide(request(base: [("accept-encoding", "br;q=0.9, gzip;q=0.8")])) == .plain(.br, reason: .noDictionaryOffered))
        let available = ("available-dictionary", referenceAvailableDictionary)
        #expect(decide(request(available, base: [("accept-encoding", "dcb;q=0.9, dcz;q=0.9, br;q=0.5")]))
                == .dictionary(.dcz, referenceHash))
        #expect(decide(request(base: [("accept-encoding", "br;q=0.9, gzip;q=0.8")]), size: 20) == .plain(.identity, reason: .bodyTooSmall))
    }

    @Test func alreadyEncodedResponsesAreLeftAlone() {
        #expect(decide(request(), response: fields(("content-encoding", "br"))) == .plain(.identity, reason: .alreadyEncoded))
    }

    @Test func notAcceptableOnlyWhenNothingIsAcceptable() {
        #expect(decide(request(base: [("accept-encoding", "identity;q=0")])) == .notAcceptable)
        #expect(decide(request(base: [("accept-encoding", "identity;q=0, gzip")])) == .plain(.gzip, reason: .noDictionaryOffered))
        #expect(decide(request(base: [("accept-encoding", "x-unknown, identity;q=0")])) == .notAcceptable)
        #expect(decide(request(base: [])) == .plain(.identity, reason: .noDictionaryOffered))
    }

    @Test func lookupIsNotCalledWhenCheaperChecksFail() {
        let calls = Counter()
        _ = Negotiation.decide(request: request(("sec-fetch-site", "cross-site"), ("sec-fetch-mode", "no-cors")), path: "/static/app.v2.js",
                               response: Self.js, bodySize: 10_000, policy: NegotiationPolicy()) { _ in calls.increment(); return nil }
        #expect(calls.value == 0)
    }
}

final class Counter: Sendable {
    private let count = Locked(0)
    var value: Int { count.withLock { $0 } }
    func increment() { count.withLock { $0 += 1 } }
}

@Suite struct VaryFieldTests {
    @Test func addsTheDictionaryNamesOnce() {
        #expect(VaryField.merged(existing: [], adding: VaryField.dictionaryFieldNames()) == "Accept-Encoding, Available-Dictionary, Dictionary-ID")
        #expect(VaryField.merged(existing: ["accept-encoding, Origin"], adding: VaryField.dictionaryFieldNames(includingDictionaryID: false))
            == "accept-encoding, Origin, Available-Dictionary")
        #expect(VaryField.merged(existing: ["*"], adding: ["Accept-Encoding"]) == "*")
        #expect(VaryField.merged(existing: ["Origin", " , Cookie"], adding: ["cookie"]) == "Origin, Cookie")
    }

    /// Found by the header-fields fuzzer: a name after ", " that starts with a combining mark (U+05B9)
    /// was kept twice (" \u{05B9}" is one Character, so it was neither split off nor trimmed).
    @Test func splitsAndComparesNamesByteWise() {
        #expect(VaryField.merged(existing: ["\u{05B9}", "G, \u{05B9}"], adding: ["Accept-Encoding"]) == "\u{05B9}, G, Accept-Encoding")
        #expect(VaryField.merged(existing: ["Origin,\u{0301}x"], adding: []) == "Origin, \u{0301}x")
        #expect(VaryField.merged(existing: ["*\u{0301}"], adding: []) == "*\u{0301}")
    }

    @Test func rewritesTheFieldsInPlace() {
        var f = fields(("vary", "Origin"), ("Vary", "Accept-Encoding"))
        VaryField.addDictionaryNames(to: &f)
        #expect(f[values: .vary] == ["Origin, Accept-Encoding, Available-Dictionary, Dictionary-ID"])
    }
}

@Suite struct DictionaryFreshnessTests {
    @Test(arguments: [
        ("max-age=86400", 86_400 as Int?), ("public, max-age=60", 60), ("MAX-AGE=\"30\"", 30), ("max-age=0", nil),
        ("no-store, max-age=60", nil), ("max-age=60, no-cache", nil), ("private", nil), ("max-age=abc", nil),
        ("max-age=-1", nil), ("max-age=", nil),
    ] as [(String, Int?)])
    func lifetime(cacheControl: String, expected: Int?) {
        #expect(DictionaryFreshness.lifetime(fields(("cache-control", cacheControl))) == expected)
    }

    @Test func missingOrConflictingCacheControl() {
        #expect(DictionaryFreshness.lifetime(HTTPFields()) == nil)
        #expect(DictionaryFreshness.lifetime(fields(("cache-control", "max-age=10"), ("cache-control", "max-age=20"))) == nil)
        #expect(DictionaryFreshness.lifetime(fields(("cache-control", "max-age=10"), ("cache-control", "public"))) == 10)
        // Directives split at comma bytes (`,\u{0301}` is one Character: it hid no-cache, spoilt max-age).
        #expect(DictionaryFreshness.lifetime(fields(("cache-control", "no-cache,\u{0301}x, max-age=60"))) == nil)
        #expect(DictionaryFreshness.lifetime(fields(("cache-control", "max-age=60,\u{0301}x"))) == 60)
    }
}
