import DictionaryCodec
import Foundation

/// The bytes the lab serves: dictionaries and contents, derived deterministically from (run, scenario,
/// name), so each run's dictionaries have their own hashes (a client that names a hash from an earlier
/// run fails) and a restart of the lab serves the same bytes for the same run id. Every body is valid
/// JavaScript (script loads execute it). Pure; thread-safe.
enum LabContent {
    /// The text all of a scenario's resources share (what makes the deltas small).
    private static func base(run: String, scenario: String) -> String {
        var text = "/* dcserve lab: run \(run), scenario \(scenario) */\n"
        for i in 0..<120 {
            text += "var lab_\(i) = \"\(scenario) line \(i) of the shared text: the quick brown fox jumps over the lazy dog \(i * 7919 % 1000)\";\n"
        }
        return text
    }

    static func dictionary(run: String, scenario: String, name: String) -> [UInt8] {
        Array(("/* dictionary \(name) */\n" + base(run: run, scenario: scenario)).utf8)
    }

    /// The decoy a wrong-hash response is compressed with (never registered by anyone).
    static func decoy(run: String, scenario: String) -> [UInt8] {
        Array(("/* decoy, never a dictionary */\n" + base(run: run, scenario: scenario).uppercased()).utf8)
    }

    static func content(run: String, scenario: String, name: String) -> [UInt8] {
        if name == "probe" { return Array("/* dcserve lab probe: \(scenario) */\n".utf8) }
        let text = base(run: run, scenario: scenario).replacingOccurrences(of: "line 17 ", with: "line seventeen ")
        return Array(("/* content \(name) */\n" + text + "var lab_done = true;\n").utf8)
    }
}
