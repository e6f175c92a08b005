import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Writes a CLI output file atomically: a temporary file in the same directory, written fully and
/// fsynced, then renamed over the destination and the directory fsynced. Readers see the old file or
/// the whole new one; on failure the temporary file is removed and the destination is untouched.
enum AtomicOutputFile {
    static func write(_ bytes: [UInt8], to path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        let dir = directory.isEmpty ? "." : directory
        var template = Array((dir + "/.\((path as NSString).lastPathComponent).tmp-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw CLIError("\(path): cannot create a temporary file in \(dir) (\(String(cString: strerror(errno))))") }
        let temporary = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var ok = false
        defer { if !ok { unlink(temporary) } }
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                close(fd)
                throw CLIError("\(path): write failed (\(String(cString: strerror(errno))))")
            }
            written += n
        }
        fchmod(fd, 0o644)
        guard fsync(fd) == 0, close(fd) == 0 else { throw CLIError("\(path): fsync failed (\(String(cString: strerror(errno))))") }
        guard rename(temporary, path) == 0 else { throw CLIError("\(path): rename failed (\(String(cString: strerror(errno))))") }
        ok = true
        let dirFD = open(dir, O_RDONLY | O_DIRECTORY)
        if dirFD >= 0 { fsync(dirFD); close(dirFD) }
    }
}
