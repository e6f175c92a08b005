import DictionaryCodec
import Synchronization

/// The identity bytes and SHA-256 of recently served resources, keyed by path and validator (the
/// inner handler's ETag), so a cached variant can be found without reading or hashing the file again.
///
/// Bounded by a byte budget with least-recently-used eviction. Thread-safe (one `Mutex`); entries are
/// immutable values whose byte arrays are shared copy-on-write.
public final class ResourceCache: Sendable {
    public struct Entry: Sendable {
        public let bytes: [UInt8]
        public let hash: DictionaryHash
    }

    private struct State {
        var entries: [String: (entry: Entry, tick: UInt64)] = [:]
        var bytes = 0
        var tick: UInt64 = 0
    }

    public let budget: Int
    private let state = Mutex(State())

    public init(budget: Int) { self.budget = budget }

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

    /// Hashes `bytes` and remembers them for `path` + `etag` (when an ETag is given and they fit).
    public func insert(path: Substring, etag: String?, bytes: [UInt8]) -> Entry {
        let entry = Entry(bytes: bytes, hash: SHA256.hash(bytes))
        guard let etag, bytes.count <= budget / 4 else { return entry }
        let key = Self.key(path, etag)
        state.withLock { s in
            s.tick &+= 1
            if let old = s.entries.updateValue((entry, s.tick), forKey: key) { s.bytes -= old.entry.bytes.count }
            s.bytes += bytes.count
            while s.bytes > budget, let victim = s.entries.min(by: { $0.value.tick < $1.value.tick }) {
                s.bytes -= victim.value.entry.bytes.count
                s.entries.removeValue(forKey: victim.key)
            }
        }
        return entry
    }

    private static func key(_ path: Substring, _ etag: String) -> String { "\(path)\u{0}\(etag)" }
}
