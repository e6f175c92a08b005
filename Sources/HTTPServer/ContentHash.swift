#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import COpenSSL
import HTTPTypes
import HTTPCore
import Locking

/// Strong validators for files: an `ETag` from the SHA-256 of the content and the `Last-Modified`
/// date, cached per (device, inode, size, mtime) so a file is hashed once until it changes.
///
/// Thread-safety: the cache is a dictionary behind a `Locked`; hashing happens outside the lock
/// (two requests may hash the same new file at once; both get the same answer).
final class FileValidatorCache: Sendable {
    struct Key: Hashable {
        var device: UInt64, inode: UInt64, size: Int64, mtimeSeconds: Int, mtimeNanos: Int
    }
    struct Validators: Sendable {
        let etag: String
        let lastModified: String
        let lastModifiedSeconds: Int
        /// `ETag` and `Last-Modified` as header fields, validated once per file version.
        let etagField: HTTPField
        let lastModifiedField: HTTPField

        init(etag: String, lastModified: String, lastModifiedSeconds: Int) {
            self.etag = etag
            self.lastModified = lastModified
            self.lastModifiedSeconds = lastModifiedSeconds
            etagField = HTTPField(name: .eTag, value: etag)
            lastModifiedField = HTTPField(name: .lastModified, value: lastModified)
        }
    }

    private let cache = Locked<[Key: Validators]>([:])
    private let capacity: Int

    init(capacity: Int = 4096) { self.capacity = capacity }

    /// The validators of the file open as `descriptor` whose `fstat` was `st`; nil when it cannot be
    /// read whole or changed while it was hashed.
    func validators(descriptor: Int32, stat st: stat) -> Validators? {
        let key = Key(device: UInt64(st.st_dev), inode: UInt64(st.st_ino), size: Int64(st.st_size),
                      mtimeSeconds: Int(st.st_mtim.tv_sec), mtimeNanos: Int(st.st_mtim.tv_nsec))
        if let hit = cache.withLock({ $0[key] }) { return hit }
        // A file rewritten while it is hashed (shorter than `st` said, or a changed `fstat` after the
        // read) has no single content to name: nil, and the caller reads it again.
        guard let digest = Self.sha256(descriptor: descriptor, size: Int64(st.st_size)) else { return nil }
        var after = stat()
        guard fstat(descriptor, &after) == 0, OpenFileCache.sameFile(after, st) else { return nil }
        let v = Self.validators(digest: digest, stat: st)
        cache.withLock { c in
            if c.count >= capacity { c.removeAll(keepingCapacity: true) }
            c[key] = v
        }
        return v
    }

    /// The validators for a file version whose content has SHA-256 `digest` and whose `fstat` is `st`.
    static func validators(digest: [UInt8], stat st: stat) -> Validators {
        let hex = digest.prefix(16).map { b -> String in
            let s = String(b, radix: 16)
            return b < 16 ? "0" + s : s
        }.joined()
        let seconds = Int(st.st_mtim.tv_sec)
        return Validators(etag: "\"\(hex)\"", lastModified: HTTPDate.format(seconds), lastModifiedSeconds: seconds)
    }

    /// SHA-256 of `bytes`.
    static func sha256(_ bytes: [UInt8]) -> [UInt8]? {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { b in
            EVP_Digest(b.baseAddress, b.count, &digest, &length, EVP_sha256(), nil)
        }
        return ok == 1 && length == 32 ? digest : nil
    }

    /// SHA-256 of the first `size` bytes of the file, read in 64 KiB blocks with pread.
    static func sha256(descriptor: Int32, size: Int64) -> [UInt8]? {
        guard let ctx = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestInit_ex(ctx, EVP_sha256(), nil) == 1 else { return nil }
        var block = [UInt8](repeating: 0, count: 64 * 1024)
        var offset: Int64 = 0
        while offset < size {
            let n = block.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, off_t(offset)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return nil }
            guard block.withUnsafeBytes({ EVP_DigestUpdate(ctx, $0.baseAddress, n) }) == 1 else { return nil }
            offset += Int64(n)
        }
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(ctx, &digest, &length) == 1, length == 32 else { return nil }
        return digest
    }
}
