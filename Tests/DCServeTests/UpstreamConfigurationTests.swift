@testable import DCServe
import Foundation
import Testing

/// `upstreams.*` and `routes.*`: loading from the file and the environment, and refusal naming the key.
@Suite struct UpstreamConfigurationTests {
    func file(_ json: String) throws -> String {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("dcserve-upstreams-\(UUID().uuidString).json").path
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func expectError(_ json: String, key: String, env: [String: String] = [:], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        do {
            _ = try await ConfigurationLoader.load(file: try file(json), environment: env)
            Issue.record("expected a configuration error for \(key)", sourceLocation: sourceLocation)
        } catch let error as ConfigurationError {
            #expect(error.key == key, "\(error)", sourceLocation: sourceLocation)
        }
    }

    static let twoRoutes = """
        {"upstreams": {"names": ["api"], "api": {"servers": ["http://127.0.0.1:8000", "https://[::1]:8443/"],
                                                 "connectTimeoutSeconds": 1.5, "readTimeoutSeconds": 20, "maxIdleConnections": 4,
                                                 "host": "upstream", "forwarded": true, "via": false, "maxBufferedBodyBytes": 1024}},
         "routes": {"names": ["api", "site"], "api": {"prefix": "/api/", "upstream": "api"}, "site": {"prefix": "/"}}}
        """

    @Test func upstreamsAndRoutesLoad() async throws {
        let c = try await ConfigurationLoader.load(file: try file(Self.twoRoutes), environment: [:])
        #expect(c.upstreams.count == 1)
        let u = try #require(c.upstreams.first)
        #expect(u.name == "api" && u.servers == ["http://127.0.0.1:8000", "https://[::1]:8443/"])
        #expect(u.connectTimeoutSeconds == 1.5 && u.readTimeoutSeconds == 20 && u.sendTimeoutSeconds == 60)
        #expect(u.maxIdleConnections == 4 && u.host == .upstream && u.forwarded && !u.via && u.forwardedFor)
        #expect(u.maxBufferedBodyBytes == 1024 && u.maxDecodedBodyBytes == 64 << 20 && u.tlsCAFile == nil)
        #expect(try u.serverURLs() == [UpstreamServerURL(tls: false, host: "127.0.0.1", port: 8000),
                                       UpstreamServerURL(tls: true, host: "::1", port: 8443)])
        #expect(c.routes == [Route(name: "api", prefix: "/api/", upstream: "api"), Route(name: "site", prefix: "/", upstream: nil)])
    }

    @Test func exampleProxyConfigurationLoads() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let c = try await ConfigurationLoader.load(file: root.appendingPathComponent("Config/proxy.json").path, environment: [:])
        #expect(c.upstreams.map(\.name) == ["api"] && c.upstreams[0].servers == ["http://127.0.0.1:8000"])
        #expect(c.routes == [Route(name: "api", prefix: "/api/", upstream: "api"), Route(name: "site", prefix: "/", upstream: nil)])
        #expect(c.rules.map(\.match) == ["/api/items*"])
    }

    @Test func environmentOverridesUpstreamKeys() async throws {
        let c = try await ConfigurationLoader.load(file: try file(Self.twoRoutes), environment: [
            "DCSERVE_UPSTREAMS_API_SERVERS": "http://10.0.0.1:81,http://10.0.0.2:82",
            "DCSERVE_UPSTREAMS_API_READ_TIMEOUT_SECONDS": "2.5",
            "DCSERVE_UPSTREAMS_API_HOST": "api.internal",
            "DCSERVE_ROUTES_API_PREFIX": "/v2/",
        ])
        #expect(c.upstreams[0].servers == ["http://10.0.0.1:81", "http://10.0.0.2:82"])
        #expect(c.upstreams[0].readTimeoutSeconds == 2.5 && c.upstreams[0].host == .fixed("api.internal"))
        #expect(c.routes[0].prefix == "/v2/")
    }

    @Test func upstreamsAndRoutesFromTheEnvironmentAlone() async throws {
        let c = try await ConfigurationLoader.load(file: try file("{}"), environment: [
            "DCSERVE_UPSTREAMS_NAMES": "api", "DCSERVE_UPSTREAMS_API_SERVERS": "http://127.0.0.1:8000",
            "DCSERVE_ROUTES_NAMES": "api", "DCSERVE_ROUTES_API_PREFIX": "/", "DCSERVE_ROUTES_API_UPSTREAM": "api",
        ])
        #expect(c.upstreams == [Upstream(name: "api", servers: ["http://127.0.0.1:8000"])])
        #expect(c.routes == [Route(name: "api", prefix: "/", upstream: "api")])
    }

    @Test func noRoutesIsTodaysStaticSite() async throws {
        let c = try await ConfigurationLoader.load(file: try file("{}"), environment: [:])
        #expect(c.upstreams.isEmpty && c.routes.isEmpty)
    }

    @Test func refusesBadUpstreamsNamingTheKey() async throws {
        let api = #""upstreams": {"names": ["api"], "api": {"servers": ["http://127.0.0.1:8000"]}}"#
        try await expectError(#"{"upstreams": {"names": ["api"], "api": {}}}"#, key: "upstreams.api.servers")
        try await expectError(#"{"upstreams": {"names": ["api"], "api": {"servers": []}}}"#, key: "upstreams.api.servers")
        for bad in ["ftp://h:1", "127.0.0.1:8000", "http://", "http://h:0", "http://h:65536", "http://h:80x", "http://h/api",
                    "http://u@h", "http://h:8000?q", "http://::1:80", "http://[::1", "http://[zz]:80", "http://h h"] {
            try await expectError(#"{"upstreams": {"names": ["api"], "api": {"servers": ["\#(bad)"]}}}"#, key: "upstreams.api.servers")
        }
        try await expectError(#"{\#(api)}"#, key: "upstreams.api.servers", env: ["DCSERVE_UPSTREAMS_API_SERVERS": "gopher://x"])
        try await expectError(#"{"upstreams": {"names": ["api", "api"], "api": {"servers": ["http://h"]}}}"#, key: "upstreams.names")
        try await expectError(#"{"upstreams": {"names": ["a.b"]}}"#, key: "upstreams.names")
        try await expectError(#"{"upstreams": {"names": [], "api": {"servers": ["http://h"]}}}"#, key: "upstreams.api")
        try await expectError(#"{"upstreams": {"names": ["api"], "api": {"servers": ["http://h"], "timeout": 1}}}"#, key: "upstreams.api.timeout")
        for field in ["connectTimeoutSeconds", "sendTimeoutSeconds", "readTimeoutSeconds", "idleTimeoutSeconds"] {
            for bad in ["0", "-1", "1e300", "31536001"] {
                try await expectError(#"{"upstreams": {"names": ["api"], "api": {"servers": ["http://h"], "\#(field)": \#(bad)}}}"#,
                                      key: "upstreams.api.\(field)")
            }
        }
        for bad in ["inf", "nan", "-inf", "1e300"] {
            try await expectError(#"{\#(api)}"#, key: "upstreams.api.connectTimeoutSeconds",
                                  env: ["DCSERVE_UPSTREAMS_API_CONNECT_TIMEOUT_SECONDS": bad])
        }
        try await expectError(#"{"upstreams": {"names": ["api"], "api": {"servers": ["http://h"], "maxIdleConnections": -1}}}"#, key: "upstreams.api.maxIdleConnections")
        try await expectError(#"{"upstreams": {"names": ["api"], "api": {"servers": ["http://h"], "maxRequestsPerConnection": 0}}}"#, key: "upstreams.api.maxRequestsPerConnection")
        try await expectError(#"{"upstreams": {"names": ["api"], "api": {"servers": ["http://h"], "maxBufferedBodyBytes": -5}}}"#, key: "upstreams.api.maxBufferedBodyBytes")
        try await expectError(#"{"upstreams": {"names": ["api"], "api": {"servers": ["http://h"], "maxDecodedBodyBytes": 9223372036854775807}}}"#, key: "upstreams.api.maxDecodedBodyBytes")
        try await expectError(#"{"upstreams": {"names": ["api"], "api": {"servers": ["http://h"], "host": "a b"}}}"#, key: "upstreams.api.host")
        try await expectError(#"{"upstreams": {"names": ["api"], "api": {"servers": ["http://h"], "tlsCAFile": "/nonexistent/ca.pem"}}}"#, key: "upstreams.api.tlsCAFile")
        try await expectError(#"{"upstreams": {"names": ["api"], "api": {"servers": ["http://h"], "via": "yes"}}}"#, key: "upstreams.api.via")
    }

    @Test func refusesBadRoutesNamingTheKey() async throws {
        let api = #""upstreams": {"names": ["api"], "api": {"servers": ["http://127.0.0.1:8000"]}}"#
        try await expectError(#"{\#(api), "routes": {"names": ["r"], "r": {"upstream": "api"}}}"#, key: "routes.r.prefix")
        try await expectError(#"{\#(api), "routes": {"names": ["r"], "r": {"prefix": "api/", "upstream": "api"}}}"#, key: "routes.r.prefix")
        try await expectError(#"{\#(api), "routes": {"names": ["r"], "r": {"prefix": "/a b", "upstream": "api"}}}"#, key: "routes.r.prefix")
        try await expectError(#"{\#(api), "routes": {"names": ["r"], "r": {"prefix": "/", "upstream": "apj"}}}"#, key: "routes.r.upstream")
        try await expectError(#"{"routes": {"names": ["r"], "r": {"prefix": "/", "upstream": "api"}}}"#, key: "routes.r.upstream")
        try await expectError(#"{\#(api), "routes": {"names": ["r", "r"], "r": {"prefix": "/"}}}"#, key: "routes.names")
        try await expectError(#"{\#(api), "routes": {"names": ["a", "b"], "a": {"prefix": "/x/"}, "b": {"prefix": "/x/", "upstream": "api"}}}"#, key: "routes.b.prefix")
        try await expectError(#"{\#(api), "routes": {"names": ["r"], "r": {"prefix": "/", "to": "api"}}}"#, key: "routes.r.to")
        try await expectError(#"{\#(api), "routes": {"names": ["r"], "r": {"prefix": "/"}}}"#, key: "routes.r.upstream",
                              env: ["DCSERVE_ROUTES_R_UPSTREAM": "nothere"])
    }

    @Test func validateRefusesDuplicateNamesBuiltByHand() throws {
        var c = DCServeConfiguration()
        c.upstreams = [Upstream(name: "a", servers: ["http://h"]), Upstream(name: "a", servers: ["http://g"])]
        #expect(throws: ConfigurationError(key: "upstreams.a", "upstream name used twice")) { try c.validate() }
        c.upstreams.removeLast()
        c.routes = [Route(name: "r", prefix: "/", upstream: "a"), Route(name: "r", prefix: "/x", upstream: nil)]
        #expect(throws: ConfigurationError(key: "routes.r", "route name used twice")) { try c.validate() }
    }

    @Test func serverURLParsing() throws {
        #expect(try UpstreamServerURL(parsing: "http://example.com") == UpstreamServerURL(tls: false, host: "example.com", port: 80))
        #expect(try UpstreamServerURL(parsing: "HTTPS://example.com/") == UpstreamServerURL(tls: true, host: "example.com", port: 443))
        #expect(try UpstreamServerURL(parsing: "http://127.0.0.1:8000").authority == "127.0.0.1:8000")
        #expect(try UpstreamServerURL(parsing: "https://[::1]:443").authority == "[::1]")
        #expect(try UpstreamServerURL(parsing: "https://[::1]:8443").description == "https://[::1]:8443")
        #expect(throws: UpstreamServerURL.ParseError.self) { try UpstreamServerURL(parsing: "http://h:99999999999999999999999") }
        #expect(throws: UpstreamServerURL.ParseError.self) { try UpstreamServerURL(parsing: "http://h:+80") }
        #expect(throws: UpstreamServerURL.ParseError.self) { try UpstreamServerURL(parsing: "http://hé") }
    }
}
