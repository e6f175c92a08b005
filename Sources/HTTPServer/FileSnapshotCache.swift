#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPTypes
import Synchronization
import HTTPCore
import Locking

/// In-memory copies of small files that were requested, with their validators, so a repeat request
/// costs no file system call: at most one `poll` of an inotify descriptor (shared by the requests an
/// event loop read in one round) instead of `fstatat` + `pread`.
///
/// Correctness: a snapshot is served only while nothing on its path has changed.
/// - Before a file's bytes are read, inotify watches (``FileChangeMonitor``) are placed on every
///   directory from the root down to the file's directory and on the file itself.
/// - After the read, `fstat` of the descriptor and `fstatat` of the path must both still equal the
///   `stat` taken at open (device, inode, size, mode, mtime, ctime). A change before the watches
///   existed shows there; a change after them is an inotify event. Either way nothing is cached.
/// - Every lookup first polls the inotify queue (one `poll`, outside the lock, consuming nothing);
///   when events are queued it drains them under the lock and empties the whole cache (deploys are
///   rare; an emptied cache refills on the next requests through the ordinary, symlink-checked path).
///   The kernel queues the event inside the changing system call, so a request sent after a change
///   completed never gets the old bytes. Events are consumed only under the lock, in the same
///   critical section that empties the table, so a lookup that polls after another thread consumed
///   them waits for the lock and finds the table already emptied.
/// - A lookup may skip its own `poll` when the request says it was read (its
///   `HTTPServerRequest.receivedSequence`) before another lookup's check began (``InputSequence``
///   loaded before that `poll`, recorded in `checkedThrough` once the check and any emptying were
///   done): that check already covered every change completed before this request was sent. Event
///   loops read all ready sockets of a round before handling any, so one `poll` serves the round.
/// - As a safety net for changes inotify cannot see (shared `mmap` writes, network file systems), a
///   snapshot older than `recheckInterval` is re-checked with `fstatat` before use.
/// The bytes and the ETag come from the same read, so a response is always self-consistent.
///
/// Bounded: files up to `maximumFileBytes`, at most `capacity` snapshots and `byteBudget` bytes; when
/// either would be exceeded the cache starts over (and drops its watches). Without inotify it caches
/// nothing. Thread-safety: one `Locked` around the table and the monitor's watch list (held for
/// table operations only; the per-request `poll`, file reads and hashing happen outside it). Snapshots are immutable but for an atomic time stamp. Any thread.
final class FileSnapshotCache: Sendable {
    /// One file version. Immutable apart from `checkedAt`; a class, so handing it out costs one retain.
    final class Snapshot: Sendable {
        let bytes: [UInt8]
        let stat: stat
        let validators: FileValidatorCache.Validators
        let relativePath: String
        /// The head of a full (200) response (ETag, Last-Modified, Content-Type, Accept-Ranges), built
        /// once: every unconditional request shares it, so it costs no allocation and compares
        /// identical to itself (see `HTTPResponse.isIdentical(to:)`).
        let fullResponseHead: HTTPResponse
        /// When `stat` was last confirmed by `fstatat` (MonotonicClock nanoseconds).
        let checkedAt: Atomic<UInt64>

        init(bytes: [UInt8], stat: stat, validators: FileValidatorCache.Validators, relativePath: String,
             fullResponseFields: HTTPFields) {
            self.bytes = bytes
            self.stat = stat
            self.validators = validators
            self.relativePath = relativePath
            fullResponseHead = HTTPResponse(status: .ok, headerFields: fullResponseFields)
            checkedAt = Atomic(MonotonicClock.nanoseconds())
        }
    }

    let maximumFileBytes: Int
    let capacity: Int
    let byteBudget: Int
    let recheckInterval: UInt64
    /// Nil when inotify is unavailable: then nothing is cached.
    private let monitor: FileChangeMonitor?
    private let state = Locked(State())
    /// Requests read up to this `InputSequence` number need no `poll` of their own: a check that
    /// loaded this number before polling found no events, or emptied the table after them.
    private let checkedThrough = Atomic<UInt64>(0)

    private struct State: ~Copyable {
        var snapshots: [String: Snapshot] = [:]
        var bytes = 0
        /// Incremented whenever the table is emptied: an insert that began in another epoch is dropped.
        var epoch: UInt64 = 0

        /// Empties the table when the monitor saw a change. Consumes the monitor's events.
        mutating func discardIfChanged(_ monitor: FileChangeMonitor) {
            if monitor.drain() { reset(monitor) }
        }

        mutating func reset(_ monitor: FileChangeMonitor) {
            snapshots.removeAll()
            bytes = 0
            epoch &+= 1
            monitor.removeAllWatches()
        }
    }

    init(maximumFileBytes: Int, capacity: Int = 1024, byteBudget: Int = 32 << 20,
         recheckInterval: Duration = .seconds(1)) {
        self.maximumFileBytes = maximumFileBytes
        self.capacity = capacity
        self.byteBudget = byteBudget
        self.recheckInterval = recheckInterval.nanoseconds
        monitor = maximumFileBytes > 0 ? FileChangeMonitor() : nil
    }

    /// Number of snapshots (for tests and diagnostics).
    var count: Int { state.withLock { $0.snapshots.count } }

    /// The snapshot for request path `key` (as normalised by the caller) if nothing changed since it
    /// was taken; `root` is the document root's descriptor for the periodic re-check.
    func lookup(_ key: Substring, root: Int32, receivedSequence: UInt64 = 0) -> Snapshot? {
        guard let monitor else { return nil }
        let found: Snapshot?
        if receivedSequence != 0 && receivedSequence <= checkedThrough.load(ordering: .acquiring) {
            // A check that began after this request had been read found the queue empty (or emptied
            // the table): nothing this request must see can be missing from the table.
            found = state.withLock { s in s.snapshots[String(key)] }
        } else {
            let sequence = InputSequence.current()
            let changed = monitor.hasPendingEvents()
            found = state.withLock { s in
                if changed { s.discardIfChanged(monitor) }
                return s.snapshots[String(key)]
            }
            // Only now (any reset done): a smaller value from a racing check is merely conservative.
            checkedThrough.store(sequence, ordering: .releasing)
        }
        guard let snapshot = found else { return nil }
        let now = MonotonicClock.nanoseconds()
        if now &- snapshot.checkedAt.load(ordering: .relaxed) < recheckInterval { return snapshot }
        var current = stat()
        guard fstatat(root, snapshot.relativePath, &current, AT_SYMLINK_NOFOLLOW) == 0,
              OpenFileCache.sameFile(current, snapshot.stat) else {
            state.withLock { s in s.reset(monitor) }
            return nil
        }
        snapshot.checkedAt.store(now, ordering: .relaxed)
        return snapshot
    }

    /// Takes a snapshot of the regular `file` (with `fstat` result `st`), reached as `relativePath`
    /// below the root (`rootPath` absolute, `root` its descriptor) without symlinks; `responseFields`
    /// gives the fields of its full response from its validators (they must depend on `key` only).
    /// Returns the snapshot, or nil when the file is too large or could change unnoticed.
    func insert(_ key: Substring, relativePath: String, file: OpenFile, stat st: stat, root: Int32, rootPath: String,
                responseFields: (FileValidatorCache.Validators) -> HTTPFields) -> Snapshot? {
        let size = Int(st.st_size)
        guard let monitor, (st.st_mode & S_IFMT) == S_IFREG, size <= maximumFileBytes, size <= byteBudget else {
            return nil
        }
        // Watches first: from here on every change is queued.
        let epoch: UInt64? = state.withLock { s in
            s.discardIfChanged(monitor)
            var directory = rootPath.isEmpty ? "/" : rootPath
            guard monitor.watchDirectory(directory) else { return nil }
            for component in relativePath.split(separator: "/").dropLast() {
                directory += (directory.hasSuffix("/") ? "" : "/") + component
                guard monitor.watchDirectory(directory) else { return nil }
            }
            return monitor.watchFile(descriptor: file.descriptor) ? s.epoch : nil
        }
        guard let epoch, let bytes = try? FileBody(file: file, range: 0..<Int64(size)).readAll(), bytes.count == size,
              let digest = FileValidatorCache.sha256(bytes) else { return nil }
        // Unchanged while it was read, and still what the path leads to?
        var after = stat(), atPath = stat()
        guard fstat(file.descriptor, &after) == 0, OpenFileCache.sameFile(after, st),
              fstatat(root, relativePath, &atPath, AT_SYMLINK_NOFOLLOW) == 0, OpenFileCache.sameFile(atPath, st) else {
            return nil
        }
        let validators = FileValidatorCache.validators(digest: digest, stat: st)
        let snapshot = Snapshot(bytes: bytes, stat: st, validators: validators, relativePath: relativePath,
                                fullResponseFields: responseFields(validators))
        let stored: Bool = state.withLock { s in
            s.discardIfChanged(monitor)
            guard s.epoch == epoch else { return false }
            let old = s.snapshots[String(key)]
            if old == nil && s.snapshots.count >= capacity || s.bytes - (old?.bytes.count ?? 0) + size > byteBudget {
                s.reset(monitor)
                return false
            }
            s.snapshots[String(key)] = snapshot
            s.bytes += size - (old?.bytes.count ?? 0)
            return true
        }
        return stored ? snapshot : nil
    }
}
