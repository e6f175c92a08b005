@testable import DCServe
import DictionaryCodec
import DictionaryTransport
import Foundation
import HTTPServer
import HTTPTypes
import Logging
import Synchronization
import Testing
import TestSupport

/// The compression middleware in front of a handler whose responses are NOT content-addressed (a
/// proxied API): two users get the same head (status, fields, length, strong ETag, path) and different
/// bodies. Each must get their own bytes, whatever the memo and resource cache remember.
@Suite struct PerUserResponseTests {
    /// Same length for every user; the body names the user.
    static func body(for user: String) -> [UInt8] {
        let tag = String(SHA256.hash(Array(user.utf8)).hex.prefix(16))
        return Array((0..<40).map { "{\"user\":\"\(tag)\",\"message\":\($0)}\n" }.joined().utf8)
    }

    /// A handler like the example API's `/api/me`: the body depends on `Authorization`, the head does not.
    struct PerUserHandler: HTTPHandler {
        let contentAddressed: Bool
        func handle(_ request: HTTPServerRequest, respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
            let user = request.head.headerFields[.authorization] ?? ""
            var response = HTTPServerResponse(status: .ok, headerFields: [
                .eTag: "\"me-v1\"", .contentType: "application/json", .cacheControl: "max-age=60",
            ], body: .bytes(PerUserResponseTests.body(for: user)))
            response.isContentAddressed = contentAddressed
            respond(response)
        }
    }

    static func middleware() throws -> (DictionaryCompressionMiddleware, String) {
        let dir = uniqueTemporaryURL("peruser").path
        var settings = DCServeConfiguration.Compression()
        settings.bestLevels = settings.fastLevels
        let store = try DirectoryDictionaryStore(directory: dir, retention: DictionaryRetention())
        let m = DictionaryCompressionMiddleware(
            rules: try DictionaryRuleSet(rules: [DictionaryRule(name: "me", match: "/api/me")], outOfBand: []),
            settings: settings, store: store, library: DictionaryLibrary(store: store),
            variants: VariantCache(budget: 64 << 20), resources: ResourceCache(budget: 64 << 20),
            background: BackgroundEncoder(maxConcurrent: 1), logger: Logger(label: "test"))
        return (m, dir)
    }

    static func get(_ m: DictionaryCompressionMiddleware, _ handler: any HTTPHandler, user: String,
                    acceptEncoding: String) throws -> (HTTPResponse, [UInt8]) {
        let request = HTTPServerRequest(head: HTTPRequest(method: .get, scheme: "http", authority: "api.example",
                                                          path: "/api/me", headerFields: [
                                                              .authorization: user, .acceptEncoding: acceptEncoding]))
        let response = try awaitedResponse { m.handle(request, next: handler, respond: $0) }
        guard case .bytes(let bytes) = response.body else { Issue.record("expected bytes"); return (response.head, []) }
        let coding = response.head.headerFields[.contentEncoding].flatMap(ContentCoding.init(token:)) ?? .identity
        return (response.head, try coding.decode(bytes))
    }

    @Test(arguments: ["gzip", "br, zstd", "identity"])
    func twoUsersWithTheSameHeadGetTheirOwnBodies(acceptEncoding: String) throws {
        let (m, dir) = try Self.middleware()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let handler = PerUserHandler(contentAddressed: false)
        #expect(Self.body(for: "Bearer alice") != Self.body(for: "Bearer bob"))
        #expect(Self.body(for: "Bearer alice").count == Self.body(for: "Bearer bob").count)
        for round in 0..<4 {
            for user in ["Bearer alice", "Bearer bob"] {
                let (_, body) = try Self.get(m, handler, user: user, acceptEncoding: acceptEncoding)
                #expect(body == Self.body(for: user), "round \(round): \(user) gets their own body")
            }
        }
        #expect(m.memo.count == 0, "responses not declared content-addressed are never memoised")
    }

    /// The same handler declaring content-addressed responses is memoised (the shortcut exists and is
    /// what the declaration switches on).
    @Test func contentAddressedResponsesAreMemoised() throws {
        let (m, dir) = try Self.middleware()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let handler = PerUserHandler(contentAddressed: true)
        for _ in 0..<4 { _ = try Self.get(m, handler, user: "Bearer alice", acceptEncoding: "gzip") }
        #expect(m.memo.count == 1)
    }

    /// `Cache-Control: no-transform`: the body and its coding pass unchanged, nothing is advertised.
    @Test func noTransformPassesThrough() throws {
        let (m, dir) = try Self.middleware()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let original = Self.body(for: "x")
        let handler = ClosureHandler { _, respond in
            respond(HTTPServerResponse(status: .ok, headerFields: [.cacheControl: "max-age=60, No-Transform",
                                                                   .contentType: "application/json"],
                                       body: .bytes(original)))
        }
        let (head, body) = try Self.get(m, handler, user: "", acceptEncoding: "gzip, br, zstd")
        #expect(head.headerFields[.contentEncoding] == nil)
        #expect(head.headerFields[.useAsDictionary] == nil)
        #expect(head.headerFields[.vary] == nil)
        #expect(body == original)
    }
}
