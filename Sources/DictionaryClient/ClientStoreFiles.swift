import Foundation

/// The client store's file operations, through Foundation only (no C library calls), so the store
/// builds on every platform. Stateless; thread-safe.
///
/// Writes are atomic (`Data.WritingOptions.atomic`: a temporary file in the same directory renamed
/// over the destination), so a reader sees the old file or the whole new one; they are not fsynced (a
/// crash may lose the latest dictionary, never corrupt one: every load re-hashes). Files are made
/// owner-only (0600) inside an owner-only (0700) directory: a client's dictionaries are its own
/// responses.
enum ClientStoreFiles {
    static func makePrivateDirectory(_ path: String) throws(DictionaryClientError) {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: path)
        } catch { throw .storage("cannot create \(path): \(error.localizedDescription)") }
    }

    static func write(_ bytes: [UInt8], to path: String) throws(DictionaryClientError) {
        do {
            try Data(bytes).write(to: URL(fileURLWithPath: path), options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        } catch { throw .storage("cannot write \(path): \(error.localizedDescription)") }
    }

    /// The whole file, or nil when it cannot be read.
    static func read(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { [UInt8]($0) }
    }

    static func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    /// Removes `path` if it exists (a missing file is not an error).
    static func remove(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }
}
