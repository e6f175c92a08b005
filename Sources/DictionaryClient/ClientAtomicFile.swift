import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Durable atomic writes for the client store: a uniquely named temporary file in the destination's
/// directory is written, fsynced and renamed over the destination, then the directory is fsynced.
/// Readers see the old or the complete new file. Thread-safe (no shared state).
enum ClientAtomicFile {
    static let temporaryPrefix = ".tmp-"

    static func write(_ bytes: [UInt8], to path: String) throws(DictionaryClientError) {
        let directory = (path as NSString).deletingLastPathComponent
        let temp = directory + "/" + temporaryPrefix + UUID().uuidString
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .storage("cannot create \(temp): \(errnoText())") }
        var failure: String?
        bytes.withUnsafeBytes { raw in
            var written = 0
            while written < raw.count {
                let n = Foundation.write(fd, raw.baseAddress! + written, raw.count - written)
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
            throw .storage(failure)
        }
        guard rename(temp, path) == 0 else {
            let reason = errnoText()
            unlink(temp)
            throw .storage("cannot rename \(temp) to \(path): \(reason)")
        }
        let dfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            fsync(dfd)
            close(dfd)
        }
    }

    static func read(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { [UInt8]($0) }
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }
}
