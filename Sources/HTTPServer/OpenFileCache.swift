#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Locking

/// Descriptors of recently served regular files, kept open so a repeat request costs one `fstatat`
/// instead of `openat` + `fstat` + `close` (the model is nginx's `open_file_cache`, but revalidated
/// on every use rather than after a period).
///
/// Correctness: an entry is used only when `fstatat(root, relativePath, AT_SYMLINK_NOFOLLOW)` now
/// reports the same device, inode, size, mode, mtime and ctime as the descriptor had when it was
/// cached. Then the cached descriptor is the very file a fresh open would reach, and its `stat` equals
/// what a fresh `fstat` would say, so the response is byte-for-byte what the slow path would build.
/// A file replaced by rename, deleted, truncated, rewritten (mtime/ctime change), re-permissioned
/// (ctime) or turned into a symlink misses and goes down the slow, symlink-checked path. A path whose
/// intermediate directory became a symlink can only hit if it leads to the same inode, which was
/// opened safely inside the root before.
///
/// Ownership: entries hold `OpenFile` references (closed when the last response using one is done
/// and the entry is gone). Bounded: at most `capacity` entries; when full, the cache starts over.
/// Thread-safety: one `Locked` around the table; `fstatat` runs outside it. Any thread.
final class OpenFileCache: Sendable {
    struct Entry: Sendable {
        let relativePath: String
        let file: OpenFile
        let stat: stat
    }

    private let table = Locked<[String: Entry]>([:])
    private let capacity: Int

    init(capacity: Int = 1024) { self.capacity = capacity }

    /// The cached file for request path `key` (as normalised by the caller) if it is still the file at
    /// `relativePath` below `root`, else nil (and the stale entry is dropped).
    func lookup(_ key: Substring, root: Int32) -> Entry? {
        guard let entry = table.withLock({ $0[String(key)] }) else { return nil }
        var now = stat()
        if fstatat(root, entry.relativePath, &now, AT_SYMLINK_NOFOLLOW) == 0 && Self.sameFile(now, entry.stat) {
            return entry
        }
        table.withLock { _ = $0.removeValue(forKey: String(key)) }
        return nil
    }

    /// Remembers a regular file just opened through the safe path.
    func insert(_ key: Substring, relativePath: String, file: OpenFile, stat st: stat) {
        guard (st.st_mode & S_IFMT) == S_IFREG else { return }
        table.withLock { t in
            if t.count >= capacity { t.removeAll(keepingCapacity: true) }
            t[String(key)] = Entry(relativePath: relativePath, file: file, stat: st)
        }
    }

    static func sameFile(_ a: stat, _ b: stat) -> Bool {
        a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size && a.st_mode == b.st_mode
            && a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec
            && a.st_ctim.tv_sec == b.st_ctim.tv_sec && a.st_ctim.tv_nsec == b.st_ctim.tv_nsec
    }
}
