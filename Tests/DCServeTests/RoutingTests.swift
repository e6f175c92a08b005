@testable import DCServe
import DictionaryCodec
import DictionaryTransport
import Foundation
import HTTPServer
import HTTPTypes
import Testing
import TestSupport
import Locking

/// `RouteHandler` (longest prefix wins) and the application's routes: static site, upstream seam
/// (502 "no proxy" until a proxy is plugged in), quick mode's single `/` route.
@Suite struct RoutingTests {
    func request(_ path: String) -> HTTPServerRequest {
        HTTPServerRequest(head: testRequest(path))
    }

    /// Runs `handler` on `path` and returns the response.
    func respond(_ handler: any HTTPHandler, _ path: String) throws -> HTTPServerResponse {
        try awaitedResponse { handler.handle(request(path), respond: $0) }
    }

    func text(_ response: HTTPServerResponse) -> String {
        if case .bytes(let bytes) = response.body { return String(decoding: bytes, as: UTF8.self) }
        return "(not bytes)"
    }

    func named(_ name: String) -> any HTTPHandler {
        ClosureHandler { _, respond in respond(.text(.ok, name)) }
    }

    @Test func longestPrefixWins() throws {
        let router = RouteHandler([(name: "root", prefix: "/", handler: named("root")),
                                   (name: "api", prefix: "/api/", handler: named("api")),
                                   (name: "v2", prefix: "/api/v2/", handler: named("v2"))])
        #expect(text(try respond(router, "/api/v2/users?x=/api/")) == "v2\n")
        #expect(text(try respond(router, "/api/v1/users")) == "api\n")
        #expect(text(try respond(router, "/api")) == "root\n")
        #expect(text(try respond(router, "/index.html")) == "root\n")
        #expect(router.routeName(for: "/api/v2") == "api")
    }

    /// `OPTIONS *` asks about the server: with no proxy taking `/`, dcserve answers it (200, `Allow`)
    /// instead of looking for a route named `*` (404).
    @Test func serverWideOptionsIsAnsweredWithoutAProxyAtTheRoot() throws {
        let router = RouteHandler([(name: "site", prefix: "/", handler: named("site")),
                                   (name: "api", prefix: "/api/", handler: named("api"))])
        let options = HTTPServerRequest(head: testRequest(.options, "*", authority: "h"))
        let response = try awaitedResponse { router.handle(options, respond: $0) }
        #expect(response.head.status == .ok)
        #expect(response.head.headerFields[.allow] == "GET, HEAD, OPTIONS")
    }

    @Test func routesMatchTheNormalizedPath() throws {
        let router = RouteHandler([(name: "site", prefix: "/", handler: named("site")),
                                   (name: "api", prefix: "/api/", handler: named("api"))])
        #expect(router.routeName(for: "/static/../api/x") == "api")
        #expect(router.routeName(for: "/%61pi/x") == "api")
        #expect(router.routeName(for: "/api/./x") == "api")
        #expect(router.routeName(for: "/api/../x") == "site")
        #expect(router.routeName(for: "/api%2Fx") == "site")  // an encoded slash is not a separator
        #expect(router.routeName(for: "/api/..") == "site")
        #expect(try respond(router, "/../etc/passwd").head.status == .badRequest)
        #expect(try respond(router, "/a/../../x").head.status == .badRequest)
    }

    @Test func normalizedPaths() {
        let cases: [(Substring, String?)] = [
            ("/", "/"), ("/a/b", "/a/b"), ("/a/./b", "/a/b"), ("/a/../b", "/b"), ("/a/b/..", "/a/"), ("/a/b/.", "/a/b/"),
            ("/%7Euser/%2e%2E/x", "/x"), ("/%41%2f%zz%", "/A%2f%zz%"), ("/..", nil), ("/a/../..", nil), ("/.hidden", "/.hidden"),
            ("/a//../b", "/a/b"), ("/%2e", "/"), ("/app.v1.js", "/app.v1.js"), ("/a/.../b", "/a/.../b"), ("/a/..b/.c", "/a/..b/.c"),
            ("/a/b/..", "/a/"),
        ]
        for (input, expected) in cases {
            #expect(RoutePath.normalized(input) == expected, "\(input)")
        }
    }

    /// Random paths over the characters that matter (bounded count, fixed seed): normalizing never
    /// traps, leaves no dot segment, and is idempotent.
    @Test func normalizationHoldsOnRandomPaths() {
        var rng = SplitMix64(seed: 9842)
        let alphabet = Array("/.%2eEaF/.x".utf8)
        for _ in 0..<20_000 {
            let length = Int(rng.next() % 24)
            let path = "/" + String(decoding: (0..<length).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }, as: UTF8.self)
            // The fast path (nothing to decode, no dot segment) answers as the full decoding would.
            #expect(RoutePath.normalized(path[...]) == RoutePath.normalizedByDecoding(path[...]), "\(path)")
            #expect(RoutePath.normalized(path.dropFirst()) == RoutePath.normalizedByDecoding(path.dropFirst()), "\(path)")
            guard let normalized = RoutePath.normalized(path[...]) else { continue }
            let segments = normalized.split(separator: "/", omittingEmptySubsequences: false)
            #expect(normalized.hasPrefix("/") && !segments.contains("..") && !segments.dropLast().contains("."), "\(path) → \(normalized)")
            #expect(RoutePath.normalized(normalized[...]) == normalized, "\(path) → \(normalized)")
        }
    }

    @Test func unroutedPathsGet404() throws {
        let router = RouteHandler([(name: "api", prefix: "/api/", handler: named("api"))])
        #expect(try respond(router, "/other").head.status == .notFound)
        #expect(try respond(router, "/ap").head.status == .notFound)
        #expect(try respond(router, "/api/x").head.status == .ok)
    }

    /// A site with one file and a fresh store; the application built from `configure`.
    func application(_ configure: (inout DCServeConfiguration) -> Void,
                     upstreamHandler: UpstreamHandlerFactory = NoProxyHandler.factory) throws -> (DCServeApplication, URL) {
        let dir = uniqueTemporaryURL("dcserve-routing")
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("site/static"), withIntermediateDirectories: true)
        try "hello static\n".write(to: dir.appendingPathComponent("site/static/a.txt"), atomically: true, encoding: .utf8)
        var c = DCServeConfiguration()
        c.site.root = dir.appendingPathComponent("site").path
        c.store.path = dir.appendingPathComponent("store").path
        c.compression.precompress = false
        configure(&c)
        try c.validate()
        return (try DCServeApplication(configuration: c, upstreamHandler: upstreamHandler), dir)
    }

    @Test func routesSendStaticPathsToTheSiteAndTheRestUpstream() throws {
        let (app, dir) = try application { c in
            c.upstreams = [Upstream(name: "api", servers: ["http://127.0.0.1:9"])]
            c.routes = [Route(name: "static", prefix: "/static/", upstream: nil), Route(name: "api", prefix: "/", upstream: "api")]
        }
        defer { app.stop(); try? FileManager.default.removeItem(at: dir) }
        let file = try respond(app.handler, "/static/a.txt")
        #expect(file.head.status == .ok)
        let upstream = try respond(app.handler, "/latest_news")
        #expect(upstream.head.status == .badGateway && text(upstream) == "no proxy for upstream api\n")
        #expect(app.staticFiles != nil)
    }

    @Test func theSeamBuildsOneHandlerPerRoutedUpstream() throws {
        let built = Locked<[String]>([])
        let (app, dir) = try application({ c in
            c.upstreams = [Upstream(name: "a", servers: ["http://127.0.0.1:9"]), Upstream(name: "unused", servers: ["http://127.0.0.1:9"])]
            c.routes = [Route(name: "a", prefix: "/", upstream: "a")]
            c.site.root = "/nonexistent/site"  // not read: no route reaches the site
        }, upstreamHandler: { upstream in
            built.withLock { $0.append(upstream.name) }
            return ClosureHandler { _, respond in respond(.text(.ok, "proxied by \(upstream.name)")) }
        })
        defer { app.stop(); try? FileManager.default.removeItem(at: dir) }
        #expect(built.withLock { $0 } == ["a"])
        #expect(app.staticFiles == nil)
        #expect(text(try respond(app.handler, "/anything")) == "proxied by a\n")
        #expect(try respond(app.handler, "/healthz").head.status == .ok)  // middleware still in front
    }

    @Test func aFailingSeamNamesTheUpstream() throws {
        struct Refused: Error {}
        #expect(throws: ConfigurationError.self) {
            _ = try application({ c in
                c.upstreams = [Upstream(name: "a", servers: ["http://127.0.0.1:9"])]
                c.routes = [Route(name: "a", prefix: "/", upstream: "a")]
            }, upstreamHandler: { _ in throw Refused() })
        }
    }

    @Test func noRoutesServesTheSiteEverywhere() throws {
        let (app, dir) = try application { _ in }
        defer { app.stop(); try? FileManager.default.removeItem(at: dir) }
        #expect(app.router == nil)
        #expect(try respond(app.handler, "/static/a.txt").head.status == .ok)
        #expect(try respond(app.handler, "/missing").head.status == .notFound)
    }

    @Test func stopIsIdempotentAndFlushes() throws {
        let (app, dir) = try application { _ in }
        defer { try? FileManager.default.removeItem(at: dir) }
        app.stop()
        app.stop()
        #expect(!app.background.submit(VariantKey(resource: SHA256.hash([1]),
                                                  dictionary: nil, coding: .gzip)) {})
    }
}

/// `BackgroundEncoder.close()` drops queued jobs and refuses new ones; `waitForRunningJobs()` waits
/// for the running one.
@Suite struct BackgroundEncoderCloseTests {
    @Test func closeWaitsForTheRunningJobAndDropsTheQueue() {
        let encoder = BackgroundEncoder<Int>(maxConcurrent: 1)
        let started = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let ran = Locked<[Int]>([])
        #expect(encoder.submit(1) { started.signal(); release.wait(); ran.withLock { $0.append(1) } })
        started.wait()
        for key in 2...5 { #expect(encoder.submit(key) { ran.withLock { $0.append(key) } }) }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) { release.signal() }
        encoder.close()
        encoder.waitForRunningJobs()  // returns only after job 1 finished
        #expect(ran.withLock { $0 } == [1])
        #expect(encoder.droppedCount == 4)
        #expect(!encoder.submit(6) {})
        #expect(encoder.pendingCount == 0)
    }
}

