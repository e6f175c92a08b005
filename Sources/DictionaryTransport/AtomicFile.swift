import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Durable, atomic file writes and plain reads (POSIX).
///
/// `writeAtomically` creates a uniquely named temporary file in the destination's directory, writes and
/// fsyncs it, renames it over the destination and fsyncs the directory: readers see the old file or
/// the complete new one, never a partial one, and after it returns the file survives a crash.
/// Thread-safe (no shared state). Package-visible: the client store (DictionaryClient) writes with it too.
package enum AtomicFile {
    /// Prefix of temporary files; stray ones are removed at start-up.
    package static let temporaryPrefix = ".tmp-"

    /// `permissions`: the new file's mode (0o600: stores hold users' data, readable by their owner only).
    package static func writeAtomically(_ bytes: [UInt8], to path: String,
                                        permissions: mode_t = 0o600) throws(DictionaryStoreError) {
        let directory = (path as NSString).deletingLastPathComponent
        let temp = directory + "/" + temporaryPrefix + UUID().uuidString
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, permissions)
        guard fd >= 0 else { throw DictionaryStoreError("cannot create \(temp): \(errnoText())") }
        var written = 0
        var failure: String?
        bytes.withUnsafeBytes { raw in
            while written < raw.count {
                let n = write(fd, raw.baseAddress! + written, raw.count - written)
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = "cannot write \(temp): \(errnoText())"
                    return
                }
                written += n
            }
        }
        if failure == nil, fsync(fd) != 0 { failure = "cannot fsync \(temp): \(errnoText())" }
        close(fd)
        if let failure {
            unlink(temp)
            throw DictionaryStoreError(failure)
        }
        guard rename(temp, path) == 0 else {
            let reason = errnoText()
            unlink(temp)
            throw DictionaryStoreError("cannot rename \(temp) to \(path): \(reason)")
        }
        try syncDirectory(directory)
    }

    package static func syncDirectory(_ directory: String) throws(DictionaryStoreError) {
        let dfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dfd >= 0 else { throw DictionaryStoreError("cannot open directory \(directory): \(errnoText())") }
        defer { close(dfd) }
        guard fsync(dfd) == 0 else { throw DictionaryStoreError("cannot fsync directory \(directory): \(errnoText())") }
    }

    /// The whole file, or nil when it cannot be read.
    package static func read(_ path: String) -> [UInt8]? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return [UInt8](data)
    }

    package static func errnoText() -> String { String(cString: strerror(errno)) }
}
