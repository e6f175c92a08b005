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
    /// Writes `bytes` to `path` atomically: a temporary file in the same directory, fsync, rename over
    /// `path`, fsync of the directory. On any failure the temporary file is removed and `path` is left
    /// as it was.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws {
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        let temporary = directory + "/.\(url.lastPathComponent).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw CLIError("\(path): cannot create (\(String(cString: strerror(errno))))") }
        var failure: String?
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = String(cString: strerror(errno))
                    return
                }
                offset += n
            }
        }
        if failure == nil, fsync(fd) != 0 { failure = String(cString: strerror(errno)) }
        if close(fd) != 0, failure == nil { failure = String(cString: strerror(errno)) }
        if failure == nil, rename(temporary, path) != 0 { failure = String(cString: strerror(errno)) }
        if let failure {
            unlink(temporary)
            throw CLIError("\(path): cannot write (\(failure))")
        }
        let dirfd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirfd >= 0 {
            fsync(dirfd)
            close(dirfd)
        }
    }

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
