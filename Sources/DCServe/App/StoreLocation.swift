import Foundation

/// Where the dictionary store may live relative to the static site.
///
/// A store inside the document root would be served publicly: every stored dictionary (including
/// ones from other rules, and their metadata records with source paths) by its hash name. dcserve
/// refuses to start that way. Both paths are resolved (symlinks, `..`) before comparing, and the
/// root inside the store is refused too (the store would then list the site's files as its own).
enum StoreLocation {
    /// Throws a ``ConfigurationError`` naming `store.path` when `store` and `documentRoot` overlap.
    static func check(store: String, documentRoot: String) throws {
        let storePath = resolved(store), rootPath = resolved(documentRoot)
        if contains(rootPath, storePath) {
            throw ConfigurationError(key: "store.path", "the dictionary store \(store) is inside the document root \(documentRoot): every stored dictionary and record would be served publicly; put the store outside the site (--store DIR)")
        }
        if contains(storePath, rootPath) {
            throw ConfigurationError(key: "store.path", "the document root \(documentRoot) is inside the dictionary store \(store); put the store in a directory of its own (--store DIR)")
        }
    }

    /// `path` absolute, with symlinks and `.`/`..` resolved as far as it exists.
    static func resolved(_ path: String) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var existing = absolute, rest: [String] = []
        while true {
            if let real = realpath(existing, nil) {
                defer { free(real) }
                let base = String(cString: real)
                return rest.isEmpty ? base : (base == "/" ? "" : base) + "/" + rest.reversed().joined(separator: "/")
            }
            let component = (existing as NSString).lastPathComponent
            let parent = (existing as NSString).deletingLastPathComponent
            if parent == existing || parent.isEmpty { return absolute }
            rest.append(component)
            existing = parent
        }
    }

    /// Whether `inner` is `outer` or below it. Compared as bytes, as the file system does: String
    /// comparison is by grapheme and canonical equivalence ("/" followed by a combining mark is one
    /// Character; a precomposed "é" equals "e" + U+0301), which names other directories on Linux.
    static func contains(_ outer: String, _ inner: String) -> Bool {
        var o = Array(outer.utf8)
        if o.last == UInt8(ascii: "/") { o.removeLast() }
        let i = Array(inner.utf8)
        return o.isEmpty || i == o || (i.starts(with: o) && i.count > o.count && i[o.count] == UInt8(ascii: "/"))
    }
}
