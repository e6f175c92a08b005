import ArgumentParser
import DictionaryCodec
import Foundation

/// File helpers for CLI commands: every failure becomes a `ValidationError`-style message on stderr
/// and a non-zero exit instead of a crash.
enum CLIFile {
    /// Reads a whole file, or throws a message naming the path and the reason.
    static func read(_ path: String) throws -> [UInt8] {
        guard FileManager.default.fileExists(atPath: path) else {
            throw CLIError("\(path): no such file")
        }
        do {
            return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw CLIError("\(path): cannot read (\(error.localizedDescription))")
        }
    }

    /// SHA-256 of a file, streamed in 1 MiB pieces.
    static func hash(of path: String) throws -> DictionaryHash {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CLIError("\(path): cannot open for reading")
        }
        defer { try? handle.close() }
        let hasher = SHA256.Hasher()
        while true {
            let chunk: Data?
            do { chunk = try handle.read(upToCount: 1 << 20) } catch {
                throw CLIError("\(path): read failed (\(error.localizedDescription))")
            }
            guard let chunk, !chunk.isEmpty else { break }
            hasher.update(chunk)
        }
        return hasher.finalize()
    }
}

extension CLIFile {
    /// Reads and hashes a dictionary file.
    static func dictionary(_ path: String) throws -> CompressionDictionary {
        CompressionDictionary(bytes: try read(path))
    }
}

/// A user-facing CLI failure: printed as `Error: <message>` with exit code 1 by ArgumentParser.
struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ message: String) { description = message }
}
