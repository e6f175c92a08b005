import DictionaryCodec
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Reads training samples from a directory tree (`dcserve train --samples DIR`).
///
/// Walks `DIR` recursively (symbolic links to files are followed, dangling ones skipped, hidden files and directories are
/// skipped) and keeps regular files that match at least one include glob (all files when none is
/// given) and no exclude glob. A glob without `/` is matched against the file name (`*.html`); one
/// with `/` against the path relative to `DIR`, where `*` also crosses `/` (`docs/*.html`). A file
/// larger than `maxSampleBytes` is truncated to that size. Any unreadable file is an error naming it:
/// training silently on part of a corpus would report misleading savings.
struct SampleDirectory {
    static let maxSampleBytes = 32 << 20

    let root: String
    var include: [String] = []
    var exclude: [String] = []

    func read() throws -> (samples: [TrainingSample], truncated: [String]) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory) else {
            throw CLIError("\(root): no such directory")
        }
        guard isDirectory.boolValue else { throw CLIError("\(root): not a directory") }
        guard let walker = FileManager.default.enumerator(atPath: root) else {
            throw CLIError("\(root): cannot list the directory")
        }
        var relativePaths: [String] = []
        while let next = walker.nextObject() as? String {
            let name = (next as NSString).lastPathComponent
            if name.hasPrefix(".") {
                if isDirectoryPath(root + "/" + next) { walker.skipDescendants() }
                continue
            }
            relativePaths.append(next)
        }
        if !FileManager.default.isReadableFile(atPath: root) || (try? FileManager.default.contentsOfDirectory(atPath: root)) == nil {
            throw CLIError("\(root): cannot read the directory (permission denied)")
        }
        var samples: [TrainingSample] = []
        var truncated: [String] = []
        for relative in relativePaths.sorted() {
            let path = root + "/" + relative
            var info = stat()
            guard stat(path, &info) == 0 else {
                let reason = errno
                var link = stat()
                if reason == ENOENT,
                   lstat(path, &link) == 0, (link.st_mode & S_IFMT) == S_IFLNK { continue }  // dangling symbolic link
                throw CLIError("\(path): cannot stat (\(String(cString: strerror(reason))))")
            }
            if (info.st_mode & S_IFMT) == S_IFDIR {
                if access(path, R_OK | X_OK) != 0 { throw CLIError("\(path): cannot read the directory (permission denied)") }
                continue
            }
            guard (info.st_mode & S_IFMT) == S_IFREG, selected(relative) else { continue }
            guard let handle = FileHandle(forReadingAtPath: path) else {
                throw CLIError("\(path): cannot read (\(String(cString: strerror(errno))))")
            }
            defer { try? handle.close() }
            let data: Data
            do { data = try handle.read(upToCount: Self.maxSampleBytes + 1) ?? Data() } catch {
                throw CLIError("\(path): read failed (\(error.localizedDescription))")
            }
            if data.count > Self.maxSampleBytes { truncated.append(relative) }
            let modified = Date(timeIntervalSince1970: TimeInterval(info.st_mtim.tv_sec) + TimeInterval(info.st_mtim.tv_nsec) / 1e9)
            samples.append(TrainingSample(name: relative, bytes: [UInt8](data.prefix(Self.maxSampleBytes)), modified: modified))
        }
        return (samples, truncated)
    }

    private func isDirectoryPath(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    func selected(_ relative: String) -> Bool {
        (include.isEmpty || include.contains { Self.matches($0, relative) }) && !exclude.contains { Self.matches($0, relative) }
    }

    static func matches(_ glob: String, _ relative: String) -> Bool {
        if glob.contains("/") { return fnmatch(glob, relative, 0) == 0 }
        return fnmatch(glob, (relative as NSString).lastPathComponent, 0) == 0
    }
}
