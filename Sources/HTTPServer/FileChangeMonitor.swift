#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// Reports whether anything watched changed since the last look: one inotify instance whose watches
/// cover directories (entries created, deleted, renamed in or out, attributes changed) and files
/// (content written, attributes changed, deleted, moved).
///
/// The kernel queues an inotify event inside the system call that makes the change, so once a
/// `write`, `rename`, `unlink`, `chmod` or `truncate` has returned, `hasChanged()` reports it. Changes
/// that do not go through such calls are not reported (writes through a shared `mmap`, changes made by
/// another host on a network file system); `FileSnapshotCache` covers those by re-checking with
/// `fstatat` after a short age.
///
/// Ownership: owns the inotify descriptor (closed on deinit). Not thread-safe: the owner serialises
/// all calls (FileSnapshotCache calls it only under its lock).
final class FileChangeMonitor {
    private let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 4096)

    /// What a watch reports: changes to content, attributes, and names; never mere reads.
    private static let directoryMask = UInt32(IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO
                                              | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF)
                                       | UInt32(IN_ONLYDIR) | UInt32(IN_DONT_FOLLOW)
    private static let fileMask = UInt32(IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF)

    /// Nil when the system has no inotify or no instance is left (EMFILE): callers then cache nothing.
    init?() {
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
    }

    deinit { close(fd) }

    /// Watches the directory at absolute `path` (not following a final symlink). False when the watch
    /// cannot be added (the path is gone or no longer a directory, or the watch limit is reached).
    func watchDirectory(_ path: String) -> Bool {
        inotify_add_watch(fd, path, Self.directoryMask) >= 0
    }

    /// Watches the file open as `descriptor`, by inode (writes through any hard link are reported).
    func watchFile(descriptor: Int32) -> Bool {
        inotify_add_watch(fd, "/proc/self/fd/\(descriptor)", Self.fileMask) >= 0
    }

    /// Reads every queued event; true if there was any (an overflowed queue counts as a change).
    /// One non-blocking `read` when nothing happened.
    func hasChanged() -> Bool {
        var changed = false
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 { changed = true; continue }
            if n < 0 && errno == EINTR { continue }
            return changed
        }
    }
}
