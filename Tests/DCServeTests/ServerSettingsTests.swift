@testable import DCServe
import Foundation
import Testing

/// `server.*` settings that used to be command-line only, and the ranges of every duration and size
/// (nonsense is refused with the key's name, never trapped on).
@Suite struct ServerSettingsTests {
    func file(_ json: String) throws -> String {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("dcserve-server-\(UUID().uuidString).json").path
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

    @Test func serverSettingsLoadFromFileAndEnvironment() async throws {
        let json = """
            {"server": {"headerTimeoutSeconds": 2.5, "bodyTimeoutSeconds": 7, "writeTimeoutSeconds": 9, "idleTimeoutSeconds": 0.5,
                        "maxRequestsPerConnection": 50, "maxBodyBytes": 4096, "eventLoops": 3, "logLevel": "debug",
                        "shutdownDeadlineSeconds": 0}}
            """
        let c = try await ConfigurationLoader.load(file: try file(json), environment: [
            "DCSERVE_SERVER_BODY_TIMEOUT_SECONDS": "8.25", "DCSERVE_SERVER_MAX_BODY_BYTES": "0", "DCSERVE_SERVER_LOG_LEVEL": "warning"])
        #expect(c.server.headerTimeoutSeconds == 2.5 && c.server.bodyTimeoutSeconds == 8.25 && c.server.writeTimeoutSeconds == 9)
        #expect(c.server.idleTimeoutSeconds == 0.5 && c.server.shutdownDeadlineSeconds == 0)
        #expect(c.server.maxRequestsPerConnection == 50 && c.server.maxBodyBytes == 0 && c.server.eventLoops == 3)
        #expect(c.server.logLevel == "warning")
        let defaults = try await ConfigurationLoader.load(file: try file("{}"), environment: [:])
        #expect(defaults.server == DCServeConfiguration.Server())
        #expect(defaults.server.eventLoops == nil && defaults.server.headerTimeoutSeconds == 10 && defaults.server.maxBodyBytes == 1 << 20)
    }

    @Test func durationsOutOfRangeAreRefusedFromTheFile() async throws {
        for key in ["idleTimeoutSeconds", "headerTimeoutSeconds", "bodyTimeoutSeconds", "writeTimeoutSeconds"] {
            for bad in ["0", "-1", "0.0001", "1e300", "31536000.5", "9223372036854775807"] {
                try await expectError(#"{"server": {"\#(key)": \#(bad)}}"#, key: "server.\(key)")
            }
        }
        for bad in ["-1", "1e300", "9223372036854775807", "-9223372036854775808"] {
            try await expectError(#"{"server": {"shutdownDeadlineSeconds": \#(bad)}}"#, key: "server.shutdownDeadlineSeconds")
        }
        try await expectError(#"{"server": {"headerTimeoutSeconds": "ten"}}"#, key: "server.headerTimeoutSeconds")
        try await expectError(#"{"tls": {"handshakeTimeoutSeconds": 1e300}}"#, key: "tls.handshakeTimeoutSeconds")
    }

    @Test func durationsOutOfRangeAreRefusedFromTheEnvironment() async throws {
        for bad in ["inf", "-inf", "nan", "infinity", "1e300", "0", "-5", "x"] {
            try await expectError("{}", key: "server.headerTimeoutSeconds", env: ["DCSERVE_SERVER_HEADER_TIMEOUT_SECONDS": bad])
            try await expectError("{}", key: "server.shutdownDeadlineSeconds", env: ["DCSERVE_SERVER_SHUTDOWN_DEADLINE_SECONDS": bad == "0" ? "-0.5" : bad])
        }
    }

    @Test func sizesAndCountsOutOfRangeAreRefused() async throws {
        let intMax = "9223372036854775807", intMin = "-9223372036854775808"
        let cases: [(String, String, [String])] = [
            ("server", "maxConnections", ["0", "-1", intMax]),
            ("server", "maxRequestsPerConnection", ["0", intMax]),
            ("server", "maxBodyBytes", ["-1", intMin, intMax]),
            ("server", "eventLoops", ["0", "257", intMax]),
            ("store", "maxBytes", ["0", "-1", intMax]),
            ("store", "maxEntriesPerRule", ["0", intMax]),
            ("store", "retainAfterExpirySeconds", ["-1", intMax]),
            ("compression", "minimumBytes", ["-1", intMax]),
            ("compression", "variantCacheBytes", ["-1", intMax]),
            ("compression", "dictionaryMemoryBytes", ["-1", intMax]),
        ]
        for (section, key, values) in cases {
            for bad in values {
                try await expectError(#"{"\#(section)": {"\#(key)": \#(bad)}}"#, key: "\(section).\(key)")
            }
        }
        try await expectError(#"{"server": {"maxBodyBytes": 1.5}}"#, key: "server.maxBodyBytes")
        try await expectError("{}", key: "server.maxBodyBytes", env: ["DCSERVE_SERVER_MAX_BODY_BYTES": "1e300"])
        try await expectError("{}", key: "server.maxBodyBytes", env: ["DCSERVE_SERVER_MAX_BODY_BYTES": "99999999999999999999"])
        try await expectError(#"{"dictionaries": {"rules": ["a"], "a": {"match": "/x", "maxAge": \#(intMax)}}}"#, key: "dictionaries.a.maxAge")
        try await expectError(#"{"server": {"logLevel": "loud"}}"#, key: "server.logLevel")
    }

    @Test func boundariesAreAccepted() async throws {
        let json = #"{"server": {"headerTimeoutSeconds": 0.001, "idleTimeoutSeconds": 31536000, "shutdownDeadlineSeconds": 31536000, "maxBodyBytes": 1099511627776, "eventLoops": 256}}"#
        let c = try await ConfigurationLoader.load(file: try file(json), environment: [:])
        #expect(c.server.shutdownDeadlineSeconds == SettingRange.maxSeconds)
        #expect(Duration.configured(seconds: c.server.shutdownDeadlineSeconds) == .seconds(31_536_000))
        #expect(Duration.configured(seconds: c.server.headerTimeoutSeconds) == .milliseconds(1))
    }

    @Test func durationConversionNeverTraps() {
        #expect(Duration.configured(seconds: .infinity) == .seconds(31_536_000))
        #expect(Duration.configured(seconds: 1e300) == .seconds(31_536_000))
        #expect(Duration.configured(seconds: -.infinity) == .zero)
        #expect(Duration.configured(seconds: .nan) == .zero)
        #expect(Duration.configured(seconds: 2.5) == .milliseconds(2500))
    }

    @Test func validatorMessagesNameKeyAndRange() {
        #expect(throws: ConfigurationError(key: "k", "must be a number of seconds from 0.001 to 31536000 (one year), not inf")) {
            try SettingRange.checkSeconds(.infinity, key: "k")
        }
        #expect(throws: ConfigurationError(key: "k", "must be 1…10 bytes, not 11")) { try SettingRange.check(11, in: 1...10, key: "k", "bytes") }
        #expect(throws: Never.self) { try SettingRange.checkSeconds(0, key: "k", zeroAllowed: true) }
    }
}
