import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// File modes of dictionary stores: dictionaries are as sensitive as the responses they decode (a
/// user's calendar, a chat), so a store directory is 0700 and its files 0600. Thread-safe (no state).
package enum StorePermissions {
    /// Makes `directory` 0700 and every regular file directly in it 0600 (symlinks and other entries
    /// are left alone: nothing outside the store is changed through them). A missing directory is
    /// ignored; failures are ignored too (the store still works, as before).
    package static func tighten(directory: String) {
        var st = stat()
        guard lstat(directory, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else { return }
        if st.st_mode & 0o077 != 0 { chmod(directory, 0o700) }
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in entries {
            let path = directory + "/" + name
            guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_mode & 0o077 != 0 else { continue }
            chmod(path, 0o600)
        }
    }
}
