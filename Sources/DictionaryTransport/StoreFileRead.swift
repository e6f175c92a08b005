import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reading one file of a dictionary store without trusting what lies in the directory.
///
/// The file is opened with `O_NOFOLLOW` (a symlink is never followed, whatever it is named) and
/// `O_NONBLOCK` (a FIFO never blocks the open), must be a regular file (`fstat`), and its size is
/// checked against `maxBytes` **before** anything is read, so a 2 GB junk file costs one `fstat`.
/// Thread-safe (no shared state).
enum StoreFileRead: Equatable {
    /// The whole file.
    case bytes([UInt8])
    /// No such file.
    case missing
    /// A symlink, directory, FIFO, device or socket: never read.
    case notRegularFile
    /// Larger than the limit (its size in bytes); nothing was read.
    case tooLarge(Int)
    /// Any other failure (the OS reason).
    case failed(String)

    /// Reads the regular file at `path` if it holds at most `maxBytes` bytes.
    static func contents(of path: String, maxBytes: Int) -> StoreFileRead {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { return .missing }
            if code == ELOOP { return .notRegularFile }  // O_NOFOLLOW on a symlink
            return .failed(String(cString: strerror(code)))
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return .failed(String(cString: strerror(errno))) }
        guard (st.st_mode & S_IFMT) == S_IFREG else { return .notRegularFile }
        let size = Int(st.st_size)
        guard size <= maxBytes else { return .tooLarge(size) }
        // Read up to one byte past the stated size: a file growing meanwhile is caught, never read unbounded.
        var bytes = [UInt8](repeating: 0, count: size + 1)
        var filled = 0
        while filled < bytes.count {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if n < 0 {
                if errno == EINTR { continue }
                return .failed(String(cString: strerror(errno)))
            }
            if n == 0 { break }
            filled += n
        }
        guard filled <= size else { return .tooLarge(filled) }
        bytes.removeSubrange(filled...)
        return .bytes(bytes)
    }

    /// The bytes when the read succeeded.
    var bytes: [UInt8]? {
        if case .bytes(let b) = self { return b }
        return nil
    }

    /// A short description for logs.
    var summary: String {
        switch self {
        case .bytes(let b): "\(b.count) bytes"
        case .missing: "missing"
        case .notRegularFile: "not a regular file"
        case .tooLarge(let n): "\(n) bytes, too large"
        case .failed(let reason): reason
        }
    }

    /// The file's type without following a symlink: true only for a regular file.
    static func isRegularFile(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
    }
}
