import Foundation
import TestSupport

/// Runs the real `zstd` CLI on bytes through temporary files; the test data is generated per run.
enum ZstdCLI {
    /// `zstd -q -c <arguments> [-D dictionary]` over `input` given on stdin (content size unknown to
    /// the encoder, as when streaming) or as a file (content size in the frame header).
    static func compress(_ input: [UInt8], _ arguments: [String], dictionary: [UInt8]? = nil, viaStdin: Bool = false)
        throws -> [UInt8]
    {
        let dir = uniqueTemporaryURL("portable-zstd")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let inPath = dir.appendingPathComponent("in").path
        let outPath = dir.appendingPathComponent("out").path
        try Data(input).write(to: URL(fileURLWithPath: inPath))
        var args = ["-q", "-f", "-c"] + arguments
        if let dictionary {
            let dictPath = dir.appendingPathComponent("dict").path
            try Data(dictionary).write(to: URL(fileURLWithPath: dictPath))
            args += ["-D", dictPath]
        }
        let quoted = args.map { "'\($0)'" }.joined(separator: " ")
        let source = viaStdin ? "< '\(inPath)'" : "'\(inPath)'"
        try shell("zstd \(quoted) \(source) > '\(outPath)'")
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: outPath)))
    }

    static func shell(_ command: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw CLIFailure(command: command, status: process.terminationStatus) }
    }

    struct CLIFailure: Error { let command: String; let status: Int32 }
}

/// Deterministic test content (SplitMix64): JSON-like records with small edits, and noise.
enum TestContent {
    static func noise(_ count: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }

    /// JSON-like text of about `count` bytes.
    static func json(_ count: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        let words = ["alpha", "beta", "gamma", "delta", "news", "calendar", "chat", "event", "title", "body"]
        var out: [UInt8] = []
        out.reserveCapacity(count + 200)
        var id = 0
        while out.count < count {
            let a = words[Int(rng.next() % UInt64(words.count))]
            let b = words[Int(rng.next() % UInt64(words.count))]
            let record = "{\"id\":\(id),\"kind\":\"\(a)\",\"title\":\"\(b) \(a) \(rng.next() % 1000)\",\"score\":\(rng.next() % 100_000)},\n"
            out += Array(record.utf8)
            id += 1
        }
        return Array(out.prefix(count))
    }

    /// `base` with `edits` small substitutions (the next version of a JSON document).
    static func edited(_ base: [UInt8], edits: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        var out = base
        guard out.count > 8 else { return out }
        for _ in 0..<edits {
            let at = Int(rng.next() % UInt64(out.count - 8))
            for k in 0..<4 { out[at + k] = UInt8(48 + rng.next() % 10) }
        }
        return out
    }
}
