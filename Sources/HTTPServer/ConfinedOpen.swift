#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Opens a path below a directory descriptor, following symlinks only while they stay inside it, in
/// one race-free walk.
///
/// Every component is opened with `openat(…, O_NOFOLLOW)` relative to the descriptor of the directory
/// before it, which this walk holds open; a symlink is read with `readlinkat` on that same descriptor
/// and its target is walked the same way: a relative target from the directory holding the link, an
/// absolute one only when it names something below `rootPath` (then from the root descriptor). `..`
/// pops the walk's own stack of held directories and never goes above the root. Nothing is ever
/// resolved by name from `/`, so swapping a directory for a symlink (or `rename`s of any kind) while
/// the walk runs can make it fail (404) but never leave the root. At most `maximumSymlinks` links are
/// followed (ELOOP beyond).
///
/// Thread-safety: no shared state; the caller owns the returned descriptor.
enum ConfinedOpen {
    static let maximumSymlinks = 40

    /// Result: a descriptor opened with `flags`, or the `errno` that ends the walk.
    enum Outcome: Equatable {
        case opened(Int32)
        case failed(Int32)
    }

    /// Opens `segments` (already free of "", "." and "..", as `DocumentPath` gives them) below `root`
    /// (`rootPath` is its resolved absolute path, "" for `/`), the last one with `flags` (which must
    /// include `O_NOFOLLOW`).
    static func open(_ segments: [String], root: Int32, rootPath: String, flags: Int32) -> Outcome {
        var held: [Int32] = []        // directories below the root, innermost last (owned)
        defer { for fd in held { close(fd) } }
        var pending = Array(segments.reversed())   // next component last
        var followed = 0
        func current() -> Int32 { held.last ?? root }

        while let component = pending.popLast() {
            if component.isEmpty || component == "." { continue }
            if component == ".." {
                guard let fd = held.popLast() else { return .failed(EXDEV) }  // would leave the root
                close(fd)
                continue
            }
            let isLast = pending.isEmpty
            let fd = isLast
                ? openat(current(), component, flags)
                : openat(current(), component, linuxOPath | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if fd >= 0 {
                if isLast { return .opened(fd) }
                held.append(fd)
                continue
            }
            let error = errno
            // ELOOP: the component is a symlink (O_NOFOLLOW). ENOTDIR for an intermediate component may
            // be a symlink too (O_DIRECTORY is checked first on some kernels).
            guard error == ELOOP || (error == ENOTDIR && !isLast) else { return .failed(error) }
            guard let target = readLink(in: current(), component) else {
                return .failed(error == ELOOP ? ENOENT : ENOTDIR)  // replaced meanwhile, or truly not a directory
            }
            followed += 1
            guard followed <= maximumSymlinks else { return .failed(ELOOP) }
            var parts = target.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
            if target.hasPrefix("/") {
                // Absolute: only inside the root, walked again from the root's descriptor.
                let rootParts = rootPath.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
                guard parts.count >= rootParts.count, Array(parts.prefix(rootParts.count)) == rootParts else {
                    return .failed(EXDEV)
                }
                parts.removeFirst(rootParts.count)
                for fd in held { close(fd) }
                held.removeAll()
            }
            if parts.isEmpty && isLast {
                // The link names a directory itself (the root, or ".." chains): open it with `flags`.
                parts = ["."]
            }
            pending.append(contentsOf: parts.reversed())
        }
        // Only reached when the last component was "." / ".." or a link to a directory: open the
        // directory the walk ends in.
        let fd = openat(current(), ".", flags & ~O_NOFOLLOW)
        return fd >= 0 ? .opened(fd) : .failed(errno)
    }

    /// The target of the symlink `name` in directory `dir`, or nil when it is not a symlink (any more).
    static func readLink(in dir: Int32, _ name: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlinkat(dir, name, &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
