import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where a CLI command writes its output (`-o PATH` of fetch, compress, decompress and train), and how.
///
/// - `-`: standard output, written through.
/// - A path that does not exist or names a regular file: a temporary file in the same directory,
///   written, fsynced and renamed over the path by ``commit()`` (then the directory is fsynced).
///   Readers see the old file or the whole new one; ``abandon()`` removes the temporary file and
///   leaves the path as it was. A replaced file keeps its permission bits; a new one gets 0644.
/// - Anything else that exists (a character or block device such as `/dev/null`, a FIFO): opened
///   for writing and written through. It is never replaced, truncated or created.
/// - A symbolic link is never replaced. It is followed: when its final target is a regular file,
///   that file is replaced as above in its own directory (the link stays); when the target is not a
///   regular file it is written through. A link into `/proc` (`/dev/stdout`, `/dev/fd/N`) is always
///   written through, appending, as a shell redirection would be. A dangling link is refused (it
///   would create a file wherever the link points).
/// - A directory is refused.
///
/// Written-through output that fails midway stays partly written (as with a shell redirection).
/// Not thread-safe: one writer, used by one command.
final class CLIOutputFile {
    /// How the output is written.
    enum Mode: Equatable {
        /// A temporary file renamed over `destination` on commit.
        case replace(destination: String)
        /// Written straight to the opened file.
        case writeThrough
        /// Standard output.
        case standardOutput
    }

    let path: String
    let mode: Mode
    private var fd: Int32
    private var temporary: String?
    private var finished = false

    /// Opens `path` for writing as the type's documentation describes. Throws a `CLIError` naming the
    /// path when it cannot be written.
    init(_ path: String) throws {
        self.path = path
        let mode = try Self.mode(for: path)
        self.mode = mode
        switch mode {
        case .standardOutput:
            fd = STDOUT_FILENO
        case .writeThrough:
            let append = Self.isProcLink(path) ? O_APPEND : 0
            fd = open(path, O_WRONLY | O_CLOEXEC | append)
            guard fd >= 0 else { throw CLIError("\(path): cannot open for writing (\(Self.errorText()))") }
        case .replace(let destination):
            let directory = (destination as NSString).deletingLastPathComponent
            let dir = directory.isEmpty ? "." : directory
            var st = stat()
            let permissions = stat(destination, &st) == 0 ? mode_t(st.st_mode & 0o7777) : 0o644
            var name = ""
            var opened: Int32 = -1
            for _ in 0..<8 {
                name = dir + "/.\((destination as NSString).lastPathComponent).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
                opened = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
                if opened >= 0 || errno != EEXIST { break }
            }
            guard opened >= 0 else {
                throw CLIError("\(path): cannot create a temporary file in \(dir) (\(Self.errorText()))")
            }
            fchmod(opened, permissions)
            fd = opened
            temporary = name
            Self.removeOnSignal(name)
        }
    }

    deinit { if !finished { abandon() } }

    /// Writes all of `bytes`; throws a `CLIError` naming the path on failure.
    func write(_ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw CLIError("\(path): write failed (\(Self.errorText()))")
            }
            offset += n
        }
    }

    func write(_ bytes: [UInt8]) throws { try bytes.withUnsafeBytes { try write($0) } }

    /// Ends the output: a replaced file is fsynced and renamed into place, a written-through one closed.
    func commit() throws {
        guard !finished else { return }
        finished = true
        switch mode {
        case .standardOutput:
            return
        case .writeThrough:
            guard close(fd) == 0 || errno == EINTR else { throw CLIError("\(path): close failed (\(Self.errorText()))") }
        case .replace(let destination):
            let temporary = self.temporary!
            var failure: String?
            if fsync(fd) != 0 { failure = "fsync failed (\(Self.errorText()))" }
            if close(fd) != 0, failure == nil { failure = "close failed (\(Self.errorText()))" }
            if failure == nil, rename(temporary, destination) != 0 { failure = "rename failed (\(Self.errorText()))" }
            Self.removeOnSignal(nil)
            if let failure {
                unlink(temporary)
                throw CLIError("\(path): \(failure)")
            }
            let directory = (destination as NSString).deletingLastPathComponent
            let dirFD = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if dirFD >= 0 { fsync(dirFD); close(dirFD) }
        }
    }

    /// Gives the output up: a temporary file is removed (the destination stays as it was); written-
    /// through output keeps what was written.
    func abandon() {
        guard !finished else { return }
        finished = true
        if mode != .standardOutput { close(fd) }
        if let temporary {
            unlink(temporary)
            Self.removeOnSignal(nil)
        }
    }

    /// The temporary file a SIGINT, SIGTERM or SIGHUP removes before the process ends (a large
    /// download interrupted leaves no hidden file behind). One at a time: a command writes one output.
    nonisolated(unsafe) private static var pendingTemporary: UnsafeMutablePointer<CChar>?

    private static func removeOnSignal(_ path: String?) {
        let old = pendingTemporary
        pendingTemporary = nil
        free(old)
        guard let path else { return }
        pendingTemporary = strdup(path)
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            signal(sig) { sig in
                if let path = CLIOutputFile.pendingTemporary { unlink(path) }
                _exit(128 + sig)
            }
        }
    }

    /// Writes `bytes` to `path` in one go (see the type's documentation).
    static func write(_ bytes: [UInt8], to path: String) throws {
        let output = try CLIOutputFile(path)
        do {
            try output.write(bytes)
            try output.commit()
        } catch {
            output.abandon()
            throw error
        }
    }

    /// Fails early, before long work, when `path` could not be written (a missing or read-only
    /// directory, a dangling link, a directory); creates nothing.
    static func checkWritable(_ path: String) throws {
        switch try mode(for: path) {
        case .standardOutput: return
        case .writeThrough:
            guard access(path, W_OK) == 0 else { throw CLIError("\(path): not writable (\(errorText()))") }
        case .replace(let destination):
            let directory = (destination as NSString).deletingLastPathComponent
            let dir = directory.isEmpty ? "." : directory
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: dir, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw CLIError("\(path): directory \(dir) does not exist")
            }
            guard access(dir, W_OK) == 0 else { throw CLIError("\(path): directory \(dir) is not writable") }
        }
    }

    /// How `path` would be written; throws for a directory or a dangling link.
    static func mode(for path: String) throws -> Mode {
        if path == "-" { return .standardOutput }
        guard !path.isEmpty else { throw CLIError("the output path is empty") }
        var link = stat()
        guard lstat(path, &link) == 0 else {
            guard errno == ENOENT else { throw CLIError("\(path): \(errorText())") }
            return .replace(destination: path)
        }
        var target = link
        if link.st_mode & S_IFMT == S_IFLNK {
            guard stat(path, &target) == 0 else {
                throw CLIError("\(path): a symbolic link whose target does not exist (\(errorText())); not followed, not replaced")
            }
        }
        switch target.st_mode & S_IFMT {
        case S_IFDIR:
            throw CLIError("\(path): is a directory")
        case S_IFREG:
            guard link.st_mode & S_IFMT == S_IFLNK else { return .replace(destination: path) }
            if isProcLink(path) { return .writeThrough }
            guard let resolved = realpath(path, nil) else {
                throw CLIError("\(path): cannot resolve the symbolic link (\(errorText()))")
            }
            defer { free(resolved) }
            return .replace(destination: String(cString: resolved))
        default:
            return .writeThrough
        }
    }

    /// Whether following `path`'s symbolic links passes through `/proc` (`/dev/stdout`, `/dev/fd/N`,
    /// `/proc/self/fd/N`): such a link names an open file, not a place to put a new one.
    static func isProcLink(_ path: String) -> Bool {
        var current = path
        for _ in 0..<40 {
            let directory = (current as NSString).deletingLastPathComponent
            if let real = realpath(directory.isEmpty ? "." : directory, nil) {
                let inProc = String(cString: real).hasPrefix("/proc/")
                free(real)
                if inProc { return true }
            }
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let n = readlink(current, &buffer, buffer.count - 1)
            guard n > 0 else { return false }
            let next = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if next.hasPrefix("/proc/") { return true }
            current = next.hasPrefix("/") ? next : (directory.isEmpty ? next : directory + "/" + next)
        }
        return false
    }

    private static func errorText() -> String { String(cString: strerror(errno)) }
}
