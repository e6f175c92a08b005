@testable import DCServe
import DictionaryCodec
import Foundation
import Testing

@Suite struct ConfigurationLoaderTests {
    /// Writes `json` to a fresh temporary file and returns its path.
    func file(_ json: String) throws -> String {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("dcserve-config-\(UUID().uuidString).json").path
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func expectError(_ json: String, key: String, env: [String: String] = [:], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let path = try file(json)
        do {
            _ = try await ConfigurationLoader.load(file: path, environment: env)
            Issue.record("expected a configuration error for \(key)", sourceLocation: sourceLocation)
        } catch let error as ConfigurationError {
            #expect(error.key == key, "\(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func exampleConfigurationLoads() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let c = try await ConfigurationLoader.load(file: root.appendingPathComponent("Config/dcserve.json").path, environment: [:])
        #expect(c.server.port == 8080)
        #expect(c.site.root == "examples/site")
        #expect(c.compression.preference == [.dcz, .dcb, .zstd, .br, .gzip])
        #expect(c.rules.map(\.name) == ["bundle", "catalog"])
        #expect(c.rules[0].match == "/static/app.*.js")
        #expect(c.rules[0].matchDest == ["script"])
        #expect(c.rules[0].id == .path)
        #expect(c.rules[0].compress == ["/static/app.*.js"])
        #expect(c.rules[1].maxAgeSeconds == 3600)
        #expect(c.compression.fastLevels[.dcz] == 3 && c.compression.bestLevels[.dcb] == 11)
    }

    @Test func environmentOverridesFile() async throws {
        let path = try file(#"{"server": {"port": 8080}, "compression": {"preference": ["zstd"]}}"#)
        let c = try await ConfigurationLoader.load(
            file: path, environment: ["DCSERVE_SERVER_PORT": "9123", "DCSERVE_COMPRESSION_PREFERENCE": "dcb,dcz"])
        #expect(c.server.port == 9123)
        #expect(c.compression.preference == [.dcb, .dcz])
        let store = try file(#"{"store": {"readThreads": 3}}"#)
        #expect(try await ConfigurationLoader.load(file: store, environment: [:]).store.readThreads == 3)
        #expect(try await ConfigurationLoader.load(file: store, environment: ["DCSERVE_STORE_READ_THREADS": "12"]).store.readThreads == 12)
        #expect(try await ConfigurationLoader.load(file: try file("{}"), environment: [:]).store.readThreads == 8)
        let compare = try file(#"{"compression": {"compareSmallBodies": false}}"#)
        #expect(try await ConfigurationLoader.load(file: compare, environment: [:]).compression.compareSmallBodies == false)
        #expect(try await ConfigurationLoader.load(file: compare, environment: ["DCSERVE_COMPRESSION_COMPARE_SMALL_BODIES": "true"])
            .compression.compareSmallBodies == true)
        #expect(try await ConfigurationLoader.load(file: try file("{}"), environment: [:]).compression.compareSmallBodies == true)
    }

    @Test func refusesBadConfigurationNamingTheKey() async throws {
        try await expectError(#"{"server": {"prot": 1}}"#, key: "server.prot")
        try await expectError(#"{"servr": {}}"#, key: "servr")
        try await expectError(#"{"server": {"port": "eighty"}}"#, key: "server.port")
        try await expectError(#"{"server": {"port": 70000}}"#, key: "server.port")
        try await expectError(#"{"server": {"port": 80}}"#, key: "server.port", env: ["DCSERVE_SERVER_PORT": "x"])
        try await expectError(#"{"store": {"readThreads": 0}}"#, key: "store.readThreads")
        try await expectError(#"{"store": {"readThreads": 257}}"#, key: "store.readThreads")
        try await expectError(#"{"compression": {"preference": ["lzma"]}}"#, key: "compression.preference")
        try await expectError(#"{"compression": {"compareSmallBodies": "yes"}}"#, key: "compression.compareSmallBodies")
        try await expectError(#"{"compression": {"levels": {"dcb": {"fast": 3}}}}"#, key: "compression.levels.dcb.fast")
        try await expectError(#"{"dictionaries": {"rules": ["a"], "a": {"maxAge": 5}}}"#, key: "dictionaries.a.match")
        try await expectError(#"{"dictionaries": {"rules": ["a"], "a": {"match": "/x", "maxAge": 0}}}"#, key: "dictionaries.a.maxAge")
        try await expectError(#"{"dictionaries": {"rules": ["a"], "a": {"match": "/x", "matchDest": ["scripts"]}}}"#, key: "dictionaries.a.matchDest")
        try await expectError(#"{"dictionaries": {"rules": [], "a": {"match": "/x"}}}"#, key: "dictionaries.a")
        try await expectError(#"{"dictionaries": {"rules": ["a"], "a": {"match": "/x", "colour": 1}}}"#, key: "dictionaries.a.colour")
        try await expectError("[1, 2]", key: "(top level)")
        try await expectError(#"{"dictionaries": {"rules": ["a"], "a": {"match": "/(a|b)/*"}}}"#, key: "dictionaries.a.match")
        try await expectError(#"{"dictionaries": {"rules": ["a"], "a": {"match": "https://other.example/x/*"}}}"#, key: "dictionaries.a.match")
        try await expectError(#"{"dictionaries": {"rules": ["a"], "a": {"match": "/x/*", "compress": ["/y/(z)"]}}}"#, key: "dictionaries.a.compress")
    }

    @Test func missingOrMalformedFile() async throws {
        await #expect(throws: ConfigurationError.self) {
            try await ConfigurationLoader.load(file: "/nonexistent/dcserve.json", environment: [:])
        }
        let path = try file("{not json")
        await #expect(throws: ConfigurationError.self) { try await ConfigurationLoader.load(file: path, environment: [:]) }
    }

    // MARK: TLS keys (tls.*, server.redirectToHTTPS, server.trustedProxies)

    @Test func tlsKeysLoadFromFileAndEnvironment() async throws {
        let cert = try file("certificate placeholder"), key = try file("key placeholder")
        let json = """
            {"server": {"port": 8080, "redirectToHTTPS": true, "trustedProxies": ["10.0.0.1", "::1"]},
             "tls": {"port": 8443, "host": "0.0.0.0", "certificate": "\(cert)", "key": "\(key)", "handshakeTimeoutSeconds": 5,
                     "sni": {"names": ["b"], "b": {"serverName": "b.example", "certificate": "\(cert)", "key": "\(key)"}}}}
            """
        let c = try await ConfigurationLoader.load(file: try file(json), environment: ["DCSERVE_TLS_PORT": "9443"])
        #expect(c.server.redirectToHTTPS)
        #expect(c.server.trustedProxies == ["10.0.0.1", "::1"])
        #expect(c.tls.isEnabled && c.tls.port == 9443 && c.tls.host == "0.0.0.0" && c.tls.handshakeTimeoutSeconds == 5)
        #expect(c.tls.certificate == cert && c.tls.key == key)
        #expect(c.tls.sni == [DCServeConfiguration.SNICertificate(name: "b", serverName: "b.example", certificate: cert, key: key)])
        let plain = try await ConfigurationLoader.load(file: try file("{}"), environment: [:])
        #expect(!plain.tls.isEnabled && !plain.server.redirectToHTTPS && plain.server.trustedProxies.isEmpty)
    }

    @Test func refusesBadTLSConfigurationNamingTheKey() async throws {
        let cert = try file("certificate placeholder"), key = try file("key placeholder")
        try await expectError(#"{"tls": {"certfile": "x"}}"#, key: "tls.certfile")
        try await expectError(#"{"tls": {"certificate": "\#(cert)"}}"#, key: "tls.key")
        try await expectError(#"{"tls": {"certificate": "/nonexistent.pem", "key": "\#(key)"}}"#, key: "tls.certificate")
        try await expectError(#"{"tls": {"certificate": "\#(cert)", "key": "\#(key)", "port": 70000}}"#, key: "tls.port")
        try await expectError(#"{"server": {"port": 8443}, "tls": {"certificate": "\#(cert)", "key": "\#(key)", "port": 8443}}"#, key: "tls.port")
        try await expectError(#"{"tls": {"certificate": "\#(cert)", "key": "\#(key)", "handshakeTimeoutSeconds": 0}}"#, key: "tls.handshakeTimeoutSeconds")
        try await expectError(#"{"server": {"redirectToHTTPS": true}}"#, key: "server.redirectToHTTPS")
        try await expectError(#"{"server": {"trustedProxies": ["10.0.0.0/8"]}}"#, key: "server.trustedProxies")
        try await expectError(#"{"tls": {"certificate": "\#(cert)", "key": "\#(key)", "sni": {"names": ["a"], "a": {"serverName": "a.example", "key": "\#(key)"}}}}"#, key: "tls.sni.a.certificate")
        try await expectError(#"{"tls": {"certificate": "\#(cert)", "key": "\#(key)", "sni": {"names": [], "a": {}}}}"#, key: "tls.sni.a")
        try await expectError(#"{"tls": {"certificate": "\#(cert)", "key": "\#(key)", "sni": {"names": ["a"], "a": {"host": "x"}}}}"#, key: "tls.sni.a.host")
    }
}
