#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// Reports whether anything watched changed: one inotify instance whose watches cover directories
/// (entries created, deleted, renamed in or out, attributes changed) and files (content written,
/// attributes changed, deleted, moved).
///
/// The kernel queues an inotify event inside the system call that makes the change, so once a
/// `write`, `rename`, `unlink`, `chmod` or `truncate` has returned, `hasPendingEvents()` reports it
/// until someone drains the queue. Changes that do not go through such calls are not reported
/// (writes through a shared `mmap`, changes made by another host on a network file system);
/// `FileSnapshotCache` covers those by re-checking with `fstatat` after a short age.
///
/// Ownership: owns the inotify descriptor for its whole life (closed on deinit).
/// Thread-safety: `hasPendingEvents()` may be called from any thread at any time (it only polls the
/// descriptor and consumes nothing); every other method must be serialised by the owner
/// (FileSnapshotCache calls them only under its lock).
final class FileChangeMonitor: @unchecked Sendable {
    private let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 4096)
    private var watches = Set<Int32>()

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
        add(inotify_add_watch(fd, path, Self.directoryMask))
    }

    /// Watches the file open as `descriptor`, by inode (writes through any hard link are reported).
    func watchFile(descriptor: Int32) -> Bool {
        add(inotify_add_watch(fd, "/proc/self/fd/\(descriptor)", Self.fileMask))
    }

    private func add(_ wd: Int32) -> Bool {
        guard wd >= 0 else { return false }
        watches.insert(wd)
        return true
    }

    /// Whether events are queued (one `poll` that consumes nothing). Any thread.
    func hasPendingEvents() -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) > 0
    }

    /// Reads every queued event; true if there was any (an overflowed queue counts as a change).
    func drain() -> Bool {
        var changed = false
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 { changed = true; continue }
            if n < 0 && errno == EINTR { continue }
            return changed
        }
    }

    /// Removes every watch and the events that removal queues (IN_IGNORED).
    func removeAllWatches() {
        for wd in watches { inotify_rm_watch(fd, wd) }
        watches.removeAll()
        _ = drain()
    }
}
