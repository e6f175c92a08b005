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
    }

    @Test func refusesBadConfigurationNamingTheKey() async throws {
        try await expectError(#"{"server": {"prot": 1}}"#, key: "server.prot")
        try await expectError(#"{"servr": {}}"#, key: "servr")
        try await expectError(#"{"server": {"port": "eighty"}}"#, key: "server.port")
        try await expectError(#"{"server": {"port": 70000}}"#, key: "server.port")
        try await expectError(#"{"server": {"port": 80}}"#, key: "server.port", env: ["DCSERVE_SERVER_PORT": "x"])
        try await expectError(#"{"compression": {"preference": ["lzma"]}}"#, key: "compression.preference")
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
}
