import DictionaryTransport
import Foundation

/// The SQLite store's files on disk: the directory (`0700` when created here), the database file
/// (`0600`, created before SQLite opens it so it never exists with a wider mode; SQLite gives its
/// `-wal` and `-shm` files the same mode), and quarantine of a corrupt database.
enum SQLiteStoreFiles {
    /// SQLite's companion files of a database in WAL mode.
    static let companions = ["-wal", "-shm"]

    /// Creates `directory` (`0700`) if needed and the database file (`0600`) if missing; narrows an
    /// existing database's (and companions') mode to `0600`. Refuses a database path that is a
    /// symlink or not a regular file.
    static func prepare(directory: String, database: String) throws {
        var st = stat()
        if lstat(directory, &st) != 0 {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw SQLiteStoreOpenError("cannot create the store directory \(directory): \(error.localizedDescription)")
            }
        } else if (st.st_mode & S_IFMT) != S_IFDIR {
            throw SQLiteStoreOpenError("\(directory) is not a directory")
        } else {
            // An older store's directory and files: 0700 and 0600 too.
            StorePermissions.tighten(directory: directory)
        }
        let fd = open(database, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let reason = errno == ELOOP ? "it is a symlink (never followed)" : String(cString: strerror(errno))
            throw SQLiteStoreOpenError("cannot open \(database): \(reason)")
        }
        defer { close(fd) }
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            throw SQLiteStoreOpenError("\(database) is not a regular file")
        }
        if st.st_mode & 0o077 != 0 { fchmod(fd, 0o600) }
        for suffix in companions {
            var cst = stat()
            let companion = database + suffix
            guard lstat(companion, &cst) == 0 else { continue }
            guard (cst.st_mode & S_IFMT) == S_IFREG else {
                throw SQLiteStoreOpenError("\(companion) is not a regular file (symlinks are never followed)")
            }
            if cst.st_mode & 0o077 != 0 { chmod(companion, 0o600) }
        }
    }

    /// Moves the database and its companions into `<directory>/quarantine/` (`0700`); returns the
    /// database's new path, or nil when it could not be moved (then it is removed).
    static func quarantine(database: String, directory: String) -> String? {
        let quarantine = directory + "/quarantine"
        try? FileManager.default.createDirectory(atPath: quarantine, withIntermediateDirectories: true,
                                                 attributes: [.posixPermissions: 0o700])
        var qst = stat()
        let usable = lstat(quarantine, &qst) == 0 && (qst.st_mode & S_IFMT) == S_IFDIR
        let stamp = String(UInt64(Date().timeIntervalSince1970 * 1000))
        let name = (database as NSString).lastPathComponent
        var moved: String?
        for suffix in [""] + companions {
            let source = database + suffix
            let target = quarantine + "/" + name + "." + stamp + suffix
            if usable, rename(source, target) == 0 {
                if suffix.isEmpty { moved = target }
            } else {
                unlink(source)
            }
        }
        return moved
    }
}
