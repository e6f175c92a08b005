import DictionaryCodec
import DictionaryTransport
import Synchronization

/// Which stored versions of live (proxied) responses a client may still name, per
/// (rule, partition, URL path): the last `upstreamVersions` of each, newest last.
///
/// A hash this index has ever seen for a live rule is answered ONLY through it: by (partition, hash),
/// never by hash alone. A client naming a version past the retention, or another partition's
/// version, gets `nil` — the same answer as for an unknown hash. Lookups are O(1) (hash maps),
/// whatever the number of partitions.
///
/// Thread-safe (one `Mutex`). Rebuilt at start-up from the store's records (rule, partition, source
/// path, first/last served), so deltas continue after a restart.
public final class LiveVersionIndex: Sendable {
    struct SlotKey: Hashable, Sendable {
        var rule: String
        var partition: String
        var path: String
    }

    struct Member: Hashable, Sendable {
        var partition: String
        var hash: DictionaryHash
    }

    private struct State {
        var slots: [SlotKey: [DictionaryHash]] = [:]
        /// (partition, hash) → how many slots retain it.
        var retained: [Member: Int] = [:]
        /// Every hash stored by a live rule (retained or not), with the partitions that stored it: such
        /// hashes are never looked up by hash alone.
        var live: [DictionaryHash: Set<String>] = [:]
    }

    private let state = Mutex(State())
    /// rule name → versions kept per URL (nil: unlimited).
    let limits: [String: Int?]

    init(limits: [String: Int?]) { self.limits = limits }

    /// Records `hash` as the newest version at `key`; returns the hashes that fell out of the
    /// retention for (partition) (no other slot retains them).
    @discardableResult
    func add(_ hash: DictionaryHash, at key: SlotKey) -> [DictionaryHash] {
        let limit = limits[key.rule] ?? nil
        return state.withLock { s -> [DictionaryHash] in
            s.live[hash, default: []].insert(key.partition)
            var versions = s.slots[key] ?? []
            if versions.last == hash { return [] }
            if let i = versions.firstIndex(of: hash) {
                versions.remove(at: i)  // the same bytes again: they become the newest
            } else {
                s.retained[Member(partition: key.partition, hash: hash), default: 0] += 1
            }
            versions.append(hash)
            var dropped: [DictionaryHash] = []
            if let limit {
                while versions.count > limit {
                    let old = versions.removeFirst()
                    let member = Member(partition: key.partition, hash: old)
                    let count = (s.retained[member] ?? 1) - 1
                    if count <= 0 { s.retained[member] = nil; dropped.append(old) } else { s.retained[member] = count }
                }
            }
            s.slots[key] = versions
            return dropped
        }
    }

    /// What a client in `partition` naming `hash` gets.
    enum Verdict: Equatable {
        /// Not a live version: the ordinary lookup by hash applies.
        case notLive
        /// Stored for this partition and still retained: usable.
        case allowed
        /// Another partition's version (never this one's): answered as if unknown.
        case otherPartition
        /// This partition's version, past the retention: answered as if unknown.
        case pastRetention
    }

    /// The verdict for `hash` named by a client in `partition`, O(1).
    func verdict(_ hash: DictionaryHash, partition: String) -> Verdict {
        state.withLock { s -> Verdict in
            guard let owners = s.live[hash] else { return .notLive }
            if s.retained[Member(partition: partition, hash: hash)] != nil { return .allowed }
            return owners.contains(partition) ? .pastRetention : .otherPartition
        }
    }

    /// Rebuilds the index from the store's records of live rules (oldest first by last served).
    func load(from store: any DictionaryStore) {
        var records: [(DictionaryHash, DictionaryMetadata)] = []
        for hash in store.hashes {
            guard let m = store.metadata(hash), let rule = m.rule, limits.keys.contains(rule) else { continue }
            records.append((hash, m))
        }
        records.sort { ($0.1.lastServed, $0.1.firstServed) < ($1.1.lastServed, $1.1.firstServed) }
        for (hash, m) in records {
            add(hash, at: SlotKey(rule: m.rule ?? "", partition: m.partition ?? "", path: m.sourcePath ?? ""))
        }
    }
}
