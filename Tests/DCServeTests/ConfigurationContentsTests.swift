@testable import DCServe
import Foundation
import Testing

/// `ConfigurationLoader.load(contents:file:environment:)` (the in-memory entry point the config fuzzer
/// uses) answers exactly what `load(file:)` answers for a file with the same bytes.
@Suite struct ConfigurationContentsTests {
    static let documents: [String] = [
        "{}",
        #"{"server": {"port": 9000, "host": "127.0.0.1"}, "compression": {"preference": ["zstd", "br"]}}"#,
        #"{"dictionaries": {"rules": ["a"], "a": {"match": "/static/*.js", "maxAge": 60, "matchDest": ["script"]}}}"#,
        #"{"server": {"prot": 1}}"#,
        #"{"server": {"port": "eighty"}}"#,
        #"{"server": {"port": 70000}}"#,
        #"{"compression": {"preference": ["lzma"]}}"#,
        #"{"dictionaries": {"rules": ["a"], "a": {"maxAge": 5}}}"#,
        #"{"upstreams": {"names": ["api"], "api": {"servers": ["ftp://x"]}}}"#,
        "[1, 2]",
        "{not json",
        "",
    ]

    func file(_ bytes: [UInt8]) throws -> String {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("dcserve-contents-\(UUID().uuidString).json").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    enum Answer: Equatable {
        case configuration(DCServeConfiguration)
        case refused(ConfigurationError)
        case other(String)
    }

    func answer(_ body: () async throws -> DCServeConfiguration) async -> Answer {
        do { return .configuration(try await body()) } catch let error as ConfigurationError {
            return .refused(error)
        } catch { return .other("\(error)") }
    }

    @Test(arguments: documents)
    func contentsAnswerLikeTheFile(_ document: String) async throws {
        let bytes = Array(document.utf8)
        let path = try file(bytes)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let env = ["DCSERVE_SERVER_MAX_CONNECTIONS": "77"]
        let fromFile = await answer { try await ConfigurationLoader.load(file: path, environment: env) }
        let fromContents = await answer { try ConfigurationLoader.load(contents: bytes, file: path, environment: env) }
        #expect(fromFile == fromContents)
        if case .other(let error) = fromContents { Issue.record("not a ConfigurationError: \(error)") }
    }

    @Test func contentsApplyEnvironmentOverridesAndNameTheSource() throws {
        let c = try ConfigurationLoader.load(contents: Array(#"{"server": {"port": 8080}}"#.utf8),
                                             environment: ["DCSERVE_SERVER_PORT": "9123"])
        #expect(c.server.port == 9123)
        let error = #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader.load(contents: Array("{".utf8), file: "memory.json", environment: [:])
        }
        #expect(error?.key == "memory.json" && error?.reason.hasPrefix("not valid JSON") == true)
    }
}
