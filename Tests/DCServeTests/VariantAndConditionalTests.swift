@testable import DCServe
import DictionaryCodec
import HTTPServer
import HTTPTypes
import Testing

@Suite struct VariantETagTests {
    let hash = SHA256.hash(Array("dictionary".utf8))

    @Test func eachVariantGetsItsOwnTag() {
        let tags = [
            VariantETag.make(from: "\"abc\"", coding: .identity, dictionary: nil),
            VariantETag.make(from: "\"abc\"", coding: .br, dictionary: nil),
            VariantETag.make(from: "\"abc\"", coding: .gzip, dictionary: nil),
            VariantETag.make(from: "\"abc\"", coding: .dcz, dictionary: hash),
            VariantETag.make(from: "\"abc\"", coding: .dcb, dictionary: hash),
            VariantETag.make(from: "\"abc\"", coding: .dcz, dictionary: SHA256.hash(Array("other".utf8))),
        ]
        #expect(Set(tags).count == tags.count)
        #expect(tags[0] == "\"abc\"")
        #expect(tags[1] == "W/\"abc-br\"")
        #expect(tags[3] == "W/\"abc-dcz-\(hash.hex.prefix(16))\"")
    }

    /// The tag names the variant, not its level: a revalidation after the best-level encode replaced the
    /// fast one still matches (and the tag is weak: the bytes differ).
    @Test func theLevelIsNotPartOfTheTag() {
        #expect(VariantETag.make(from: "\"abc\"", coding: .dcz, dictionary: hash) == VariantETag.make(from: "\"abc\"", coding: .dcz, dictionary: hash))
        #expect(ConditionalRequest.matches([VariantETag.make(from: "\"abc\"", coding: .br, dictionary: nil)], "W/\"abc-br\""))
    }

    @Test func weakStaysWeak() {
        #expect(VariantETag.make(from: "W/\"x\"", coding: .gzip, dictionary: nil) == "W/\"x-gzip\"")
    }
}

@Suite struct ConditionalRequestTests {
    func response(etag: String = "\"v1\"", lastModified: String? = "Sun, 22 Nov 2026 05:00:00 GMT") -> HTTPServerResponse {
        var fields: HTTPFields = [.eTag: etag, .vary: "Accept-Encoding", .cacheControl: "max-age=60", .contentType: "text/plain"]
        if let lastModified { fields[.lastModified] = lastModified }
        return HTTPServerResponse(status: .ok, headerFields: fields, body: .bytes([1, 2, 3]))
    }

    @Test func ifNoneMatchUsesWeakComparisonAndLists() {
        for header in ["\"v1\"", "W/\"v1\"", "\"x\", \"v1\"", "*"] {
            let out = ConditionalRequest([.ifNoneMatch: header]).evaluate(response(), identityETag: "\"v1\"")
            #expect(out.head.status == .notModified, "\(header)")
            #expect(out.head.headerFields[.eTag] == "\"v1\"" && out.head.headerFields[.vary] == "Accept-Encoding")
            #expect(out.head.headerFields[.contentType] == nil && out.body.knownLength == 0)
        }
        #expect(ConditionalRequest([.ifNoneMatch: "\"v2\""]).evaluate(response(), identityETag: "\"v1\"").head.status == .ok)
    }

    /// Members are split at comma bytes: `,\u{0301}` is one Character, and was no separator to `String.split`.
    @Test func ifNoneMatchMembersSplitAtCommaBytes() {
        for header in ["\"v1\",\u{0301}\"x\"", "*,\u{0301}", "\"x\",\u{0301}, W/\"v1\""] {
            #expect(ConditionalRequest([.ifNoneMatch: header]).evaluate(response(), identityETag: "\"v1\"").head.status == .notModified, "\(header.debugDescription)")
        }
        #expect(ConditionalRequest([.ifNoneMatch: "\"x\",\u{0301}\"v1\""]).evaluate(response(), identityETag: "\"v1\"").head.status == .ok)
    }

    @Test func ifModifiedSinceOnlyWithoutIfNoneMatch() {
        let same = "Sun, 22 Nov 2026 05:00:00 GMT", earlier = "Sun, 22 Nov 2026 04:00:00 GMT"
        #expect(ConditionalRequest([.ifModifiedSince: same]).evaluate(response(), identityETag: "\"v1\"").head.status == .notModified)
        #expect(ConditionalRequest([.ifModifiedSince: earlier]).evaluate(response(), identityETag: "\"v1\"").head.status == .ok)
        #expect(ConditionalRequest([.ifModifiedSince: same, .ifNoneMatch: "\"v2\""]).evaluate(response(), identityETag: "\"v1\"").head.status == .ok)
        #expect(ConditionalRequest([.ifModifiedSince: "garbage"]).evaluate(response(), identityETag: "\"v1\"").head.status == .ok)
    }

    /// If-Match (strong) against the resource's state: the identity ETag and the variant ETags made
    /// from it match; a weak tag or another resource's tag does not. Evaluated before If-None-Match.
    @Test func ifMatchAndIfUnmodifiedSinceComeFirst() {
        let hash = SHA256.hash(Array("dictionary".utf8))
        let variant = VariantETag.make(from: "\"v1\"", coding: .dcz, dictionary: hash)
        var sent = response(etag: variant)
        sent.head.headerFields[.contentEncoding] = "dcz"
        for tag in ["\"v1\"", variant, "W/\"v1-br\"", "\"v1-br5\"", "*", "\"x\", \"v1\""] {
            #expect(ConditionalRequest([.ifMatch: tag]).evaluate(sent, identityETag: "\"v1\"").head.status == .ok, "\(tag)")
        }
        for tag in ["W/\"v1\"", "\"v2\"", "\"v1-x\"", "\"v10\"", "\"v1-\"", "W/\"v2-br\"", "W/\"v1-x\""] {
            #expect(ConditionalRequest([.ifMatch: tag]).evaluate(sent, identityETag: "\"v1\"").head.status == .preconditionFailed, "\(tag)")
        }
        #expect(ConditionalRequest([.ifMatch: "W/\"v1\""]).evaluate(response(etag: "W/\"v1\""), identityETag: "W/\"v1\"")
                    .head.status == .preconditionFailed, "weak validators never match If-Match")
        let earlier = "Sat, 21 Nov 2026 05:00:00 GMT"
        #expect(ConditionalRequest([.ifUnmodifiedSince: earlier]).evaluate(response(), identityETag: "\"v1\"").head.status == .preconditionFailed)
        #expect(ConditionalRequest([.ifUnmodifiedSince: earlier, .ifMatch: "\"v1\""]).evaluate(response(), identityETag: "\"v1\"").head.status == .ok)
        #expect(ConditionalRequest([.ifMatch: "\"v2\"", .ifNoneMatch: "\"v1\""]).evaluate(response(), identityETag: "\"v1\"").head.status
                == .preconditionFailed, "412 before 304")
    }

    @Test func onlyOKResponsesBecomeNotModified() {
        var notFound = response()
        notFound.head.status = .notFound
        #expect(ConditionalRequest([.ifNoneMatch: "*"]).evaluate(notFound, identityETag: nil).head.status == .notFound)
    }
}

@Suite struct DictionaryRuleSetTests {
    @Test func advertisingAndScope() throws {
        var bundle = DictionaryRule(name: "bundle", match: "/static/app.*.js")
        bundle.id = .path
        bundle.matchDest = ["script"]
        var api = DictionaryRule(name: "api", match: "/api/v1/*", compress: ["/api/*"])
        api.allowPrivate = true
        let rules = try DictionaryRuleSet(rules: [bundle, api], outOfBand: [])
        #expect(rules.advertisingRule(for: "/static/app.v2.js")?.name == "bundle")
        #expect(rules.advertisingRule(for: "/static/other.js") == nil)
        let ad = rules.advertisingRule(for: "/static/app.v2.js")!.advertisement(path: "/static/app.v2.js")
        #expect(try ad.fieldValue() == #"match="/static/app.*.js", match-dest=("script"), id="/static/app.v2.js""#)
        #expect(rules.dictionaryScope(for: "/api/v2/items") == DictionaryScope(allowPrivate: true))
        #expect(rules.dictionaryScope(for: "/static/app.v9.js") == DictionaryScope(allowPrivate: false))
        #expect(rules.dictionaryScope(for: "/index.html") == nil)
    }

    @Test func invalidPatternNamesTheKey() {
        #expect(throws: ConfigurationError.self) {
            try DictionaryRuleSet(rules: [DictionaryRule(name: "x", match: "/(a)/*")], outOfBand: [])
        }
    }
}
