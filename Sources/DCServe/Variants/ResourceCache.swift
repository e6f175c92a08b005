import DictionaryCodec
import Locking

/// The SHA-256, length and (when they fit) identity bytes of recently served resources, keyed by path
/// and validator (the inner handler's ETag), so a cached variant can be found without reading or
/// hashing the file again.
///
/// Bytes are kept for resources up to a quarter of the byte budget; for larger ones only the digest
/// is remembered (`bytes == nil`): the middleware then sends the file itself (sendfile) when identity
/// is chosen, and reads it again (checked against the hash, ``IdentityBody``) only to encode a
/// variant the variant cache lacks. So a large file costs no memory per request.
///
/// Bounded by a byte budget (held bytes) and `maxEntries`, least-recently-used evicted first.
/// Thread-safe (one `Locked`); entries are immutable values whose byte arrays are shared copy-on-write.
public final class ResourceCache: Sendable {
    public struct Entry: Sendable {
        public let hash: DictionaryHash
        /// Length of the identity body.
        public let count: Int
        /// The identity bytes when held in memory; nil when only the digest is remembered.
        public let bytes: [UInt8]?

        public init(bytes: [UInt8], hash: DictionaryHash) {
            self.hash = hash
            count = bytes.count
            self.bytes = bytes
        }

        public init(digestOnly hash: DictionaryHash, count: Int) {
            self.hash = hash
            self.count = count
            bytes = nil
        }

        var heldBytes: Int { bytes?.count ?? 0 }
    }

    private struct State {
        var entries: [String: (entry: Entry, tick: UInt64)] = [:]
        var bytes = 0
        var tick: UInt64 = 0
    }

    public let budget: Int
    public let maxEntries: Int
    private let state = Locked(State())

    public init(budget: Int, maxEntries: Int = 16_384) {
        self.budget = budget
        self.maxEntries = max(1, maxEntries)
    }

    /// Forgets every entry (when traffic stops).
    public func removeAll() {
        state.withLock { s in
            s.entries.removeAll()
            s.bytes = 0
        }
    }

    /// Identity bytes held now (at most `budget`).
    public var heldBytes: Int { state.withLock { $0.bytes } }

    /// Resources larger than this are remembered by digest only.
    public var largestHeldBytes: Int { budget / 4 }

    /// The cached resource for `path` whose validator is `etag`, if any.
    public func entry(path: Substring, etag: String) -> Entry? {
        let key = Self.key(path, etag)
        return state.withLock { s in
            guard let found = s.entries[key] else { return nil }
            s.tick &+= 1
            s.entries[key]!.tick = s.tick
            return found.entry
        }
    }

    /// Hashes `bytes` and remembers them for `path` + `etag` (when an ETag is given: the bytes when they
    /// fit, else the digest only). The returned entry always holds `bytes` (the caller has them anyway).
    public func insert(path: Substring, etag: String?, bytes: [UInt8]) -> Entry {
        let entry = Entry(bytes: bytes, hash: SHA256.hash(bytes))
        guard let etag else { return entry }
        remember(path: path, etag: etag, bytes.count <= largestHeldBytes ? entry : Entry(digestOnly: entry.hash, count: entry.count))
        return entry
    }

    /// Number of entries and held bytes (for tests and diagnostics).
    public var usage: (entries: Int, bytes: Int) { state.withLock { ($0.entries.count, $0.bytes) } }

    private func remember(path: Substring, etag: String, _ entry: Entry) {
        let key = Self.key(path, etag)
        state.withLock { s in
            s.tick &+= 1
            if let old = s.entries.updateValue((entry, s.tick), forKey: key) { s.bytes -= old.entry.heldBytes }
            s.bytes += entry.heldBytes
            while s.bytes > budget || s.entries.count > maxEntries,
                  let victim = s.entries.min(by: { $0.value.tick < $1.value.tick }) {
                s.bytes -= victim.value.entry.heldBytes
                s.entries.removeValue(forKey: victim.key)
            }
        }
    }

    private static func key(_ path: Substring, _ etag: String) -> String { "\(path)\u{0}\(etag)" }
}
