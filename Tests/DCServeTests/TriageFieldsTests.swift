@testable import DCServe
import DictionaryTransport
import Foundation
import HTTPServer
import HTTPTypes
import Testing

/// The one-pass field reading of the middleware's triage gives the answers of the field subscripts it
/// replaced, and the triage passes through only what it passed before (a response a rule covers, or
/// one a client can get encoded, is never passed through).
@Suite struct TriageFieldsTests {
    static let heads: [HTTPFields] = [
        [:],
        [.contentType: "application/json", .eTag: "\"1\""],
        [.contentType: "text/html", .contentEncoding: "gzip"],
        [.contentEncoding: "gzip", .contentType: "text/plain", .init("content-encoding")!: "br"],
        [.contentType: "text/plain", .init("Content-Type")!: "text/html"],
        [.contentType: "image/png", .init("Content-Type")!: "text/html"],
        [.contentType: "application/zip; name=a"],
        [.cacheControl: "max-age=60", .init("cache-control")!: "public, No-Transform"],
        [.cacheControl: "no-transform=1"],
        [.cacheControl: "max-age=60, no-transformer"],
        [.vary: "Origin", .contentType: "image/png"],
        [.init("VARY")!: "accept-encoding", .contentEncoding: "identity"],
    ]

    @Test func oneReadingGivesTheSubscriptsAnswers() {
        for fields in Self.heads {
            let t = TriageFields(fields)
            #expect(t.contentEncoding == fields[.contentEncoding], "\(fields)")
            #expect(t.precompressed == CompressionEligibility.isPrecompressed(contentType: fields[.contentType]), "\(fields)")
            #expect(t.forbidsTransform == ProxyResponseHeaders.forbidsTransform(fields), "\(fields)")
            #expect(t.hasVary == !fields[values: .vary].isEmpty, "\(fields)")
        }
    }

    static func request(_ path: String, acceptEncoding: String?) -> HTTPServerRequest {
        var fields = HTTPFields()
        if let acceptEncoding { fields[.acceptEncoding] = acceptEncoding }
        return HTTPServerRequest(head: HTTPRequest(method: .get, scheme: "http", authority: "api.example", path: path,
                                                   headerFields: fields))
    }

    static func response(_ fields: HTTPFields) -> HTTPServerResponse {
        HTTPServerResponse(status: .ok, headerFields: fields, body: .bytes(Array(repeating: 0x61, count: 4096)))
    }

    @Test func identityOnlyClientOnAPathNoRuleCoversPassesWithVary() throws {
        let (m, dir) = try PerUserResponseTests.middleware()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let plain = Self.request("/other", acceptEncoding: nil)
        for fields in Self.heads {
            var out = Self.response(fields)
            guard case .passThrough(_, _, let reason, let vary) = m.triage(plain, out) else {
                Issue.record("an identity-only request no rule covers is passed through: \(fields)")
                continue
            }
            m.apply(vary, to: &out)
            // The Vary the general merge gives, for every head that gets one.
            var expected = fields
            if reason == .identityOnlyClient { m.addVary(to: &expected, scope: nil) }
            #expect(out.head.headerFields[values: .vary] == expected[values: .vary], "\(fields)")
            #expect(out.head.headerFields.count == expected.count, "\(fields)")
            if TriageFields(fields).forbidsTransform { #expect(reason == .noTransform) }
            if fields[.contentEncoding] == "gzip" { #expect(reason == .upstreamEncoded) }
        }
    }

    @Test func aCoveredPathOrAnEncodingClientIsWorkedOn() throws {
        let (m, dir) = try PerUserResponseTests.middleware()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let json = Self.response([.contentType: "application/json"])
        guard case .work = m.triage(Self.request("/api/me", acceptEncoding: nil), json) else {
            Issue.record("a path a rule advertises is never passed through"); return
        }
        guard case .work = m.triage(Self.request("/other", acceptEncoding: "gzip"), json) else {
            Issue.record("a compressible response for a gzip client is never passed through"); return
        }
    }
}
