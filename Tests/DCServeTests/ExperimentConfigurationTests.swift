@testable import DCServe
import Foundation
import Testing

/// `experiment.*` through the configuration loader: the file, the environment overrides, and a
/// message naming the key for every invalid value.
@Suite struct ExperimentConfigurationTests {
    func load(_ json: String, env: [String: String] = [:]) throws -> DCServeConfiguration {
        try ConfigurationLoader.load(contents: Array(json.utf8), environment: env)
    }

    func expectError(_ json: String, key: String, env: [String: String] = [:], sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            _ = try load(json, env: env)
            Issue.record("expected a configuration error for \(key)", sourceLocation: sourceLocation)
        } catch let error as ConfigurationError {
            #expect(error.key == key, "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func fileAndEnvironment() throws {
        let c = try load(#"{"experiment": {"controlShare": 0.5, "key": {"header": "X-Client-Id"}, "groupHeader": "X-Group"}}"#)
        #expect(c.experiment.controlShare == 0.5 && c.experiment.key == .header("X-Client-Id") && c.experiment.groupHeader == "X-Group")
        #expect(ExperimentKeySource(configuration: c) == .header(.init("X-Client-Id")!))
        let e = try load("{}", env: ["DCSERVE_EXPERIMENT_CONTROL_SHARE": "0.25", "DCSERVE_EXPERIMENT_KEY_COOKIE": "cid"])
        #expect(e.experiment.controlShare == 0.25 && e.experiment.key == .cookie("cid") && e.experiment.groupHeader == "DCServe-Group")
        let off = try load("{}")
        #expect(!off.experiment.isEnabled && ExperimentKeySource(configuration: off) == nil)
        let partition = try load(#"{"dictionaries": {"rules": ["cal"], "cal": {"match": "/api/calendar", "partition": {"header": "Authorization"}}}, "experiment": {"controlShare": 0.1, "key": {"partition": true}}}"#)
        #expect(ExperimentKeySource(configuration: partition) == .header(.authorization))
    }

    @Test func invalidValuesNameTheirKey() {
        expectError(#"{"experiment": {"controlShare": 1.5, "key": {"header": "X-Client-Id"}}}"#, key: "experiment.controlShare")
        expectError(#"{"experiment": {"controlShare": -0.1, "key": {"header": "X-Client-Id"}}}"#, key: "experiment.controlShare")
        expectError("{}", key: "experiment.controlShare", env: ["DCSERVE_EXPERIMENT_CONTROL_SHARE": "nan", "DCSERVE_EXPERIMENT_KEY_HEADER": "X"])
        expectError(#"{"experiment": {"controlShare": 0.5}}"#, key: "experiment.key")
        expectError(#"{"experiment": {"key": {"header": "X", "cookie": "c"}}}"#, key: "experiment.key")
        expectError(#"{"experiment": {"key": {"query": "id"}}}"#, key: "experiment.key.query")
        expectError(#"{"experiment": {"key": {"header": "bad name"}}}"#, key: "experiment.key.header")
        expectError(#"{"experiment": {"key": {"cookie": "a=b"}}}"#, key: "experiment.key.cookie")
        expectError(#"{"experiment": {"key": {"header": "X"}, "groupHeader": "no good"}}"#, key: "experiment.groupHeader")
        expectError(#"{"experiment": {"controlShare": 0.5, "key": {"partition": true}}}"#, key: "experiment.key.partition")
        expectError(#"{"experiment": {"share": 0.5}}"#, key: "experiment.share")
    }
}
