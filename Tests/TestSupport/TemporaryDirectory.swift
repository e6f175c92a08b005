import Foundation

/// A new empty directory under the system temporary directory, named `prefix-<UUID>`; returns its
/// path. The caller removes it (or leaves it for the system to clean).
public func makeTemporaryDirectory(_ prefix: String = "dcserve-tests") -> String {
    let path = uniqueTemporaryURL(prefix).path
    try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// A path under the system temporary directory named `prefix-<UUID>` that nothing uses yet; nothing
/// is created.
public func uniqueTemporaryURL(_ prefix: String) -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
}
