import DictionaryCodec
import DictionaryTransport
import Foundation
import Locking

/// Which history dictionaries a client may name: per (rule, group, partition) the last
/// `keep` builds that have not expired, newest last.
///
/// A hash this index has ever seen is answered ONLY through it — by (partition, hash, request path),
/// never by hash alone: another partition, another group (the path is outside the dictionary's
/// scoped `match`), an expired or dropped build all get `.refused`, which the compression middleware
/// answers exactly like an unknown hash. The same bytes may serve several (group, partition) pairs
/// (two participants of one chat see the same messages); each pair is a separate member.
///
/// Thread-safe (one `Locked`). Rebuilt at start-up from the store's records of history rules, and
/// told of the records other instances store when the store is shared (``learn(_:rules:now:)``).
public final class HistoryDictionaryIndex: Sendable {
    /// One conversation of one partition under one rule.
    public struct GroupKey: Hashable, Sendable {
        public var rule: String
        public var group: String
        public var partition: String
    }

    /// One accepted dictionary of one group.
    public struct Member: Sendable, Equatable {
        public var key: GroupKey
        public var hash: DictionaryHash
        /// The group's `match` (e.g. `/api/chats/42/*`), compiled.
        public var pattern: URLPattern
        /// `id` member of `Use-As-Dictionary` (e.g. `chat:42`).
        public var id: String
        /// When clients' copies expire, and the server stops accepting it.
        public var expires: Date
        /// When it was built (its `firstServed` in the store): a group's members are in this order.
        public var built: Date
    }

    /// What a client naming `hash` gets.
    public enum Verdict: Equatable {
        /// Not a history dictionary: the ordinary lookups apply.
        case notHistory
        /// A history dictionary of the request's partition whose scope covers the path.
        case allowed(DictionaryCandidate, Member)
        /// A history dictionary the request may not use (answered as if unknown).
        case refused
    }

    private struct State {
        /// Retained members per group, oldest first.
        var groups: [GroupKey: [Member]] = [:]
        /// Groups retaining each hash (O(1) verdicts whatever the number of groups).
        var holders: [DictionaryHash: Set<GroupKey>] = [:]
        /// Every hash ever built or loaded (retained or not): never looked up by hash alone.
        var known: Set<DictionaryHash> = []

        mutating func setGroup(_ key: GroupKey, _ list: [Member]) {
            for old in groups[key] ?? [] where !list.contains(where: { $0.hash == old.hash }) {
                holders[old.hash]?.remove(key)
                if holders[old.hash]?.isEmpty == true { holders[old.hash] = nil }
            }
            for m in list { holders[m.hash, default: []].insert(key) }
            groups[key] = list.isEmpty ? nil : list
        }
    }

    private let state = Locked(State())

    public init() {}

    /// Adds `member` as the newest dictionary of its group (the same hash again only refreshes its
    /// expiry and makes it the newest); drops the oldest beyond `keep` and any expired at `now`.
    public func publish(_ member: Member, keep: Int, now: Date) {
        state.withLock { s in
            s.known.insert(member.hash)
            var list = s.groups[member.key] ?? []
            list.removeAll { $0.hash == member.hash || $0.expires <= now }
            list.append(member)
            if list.count > keep { list.removeFirst(list.count - keep) }
            s.setGroup(member.key, list)
        }
    }

    /// The newest unexpired dictionary of `key`, if any.
    public func current(_ key: GroupKey, now: Date) -> Member? {
        state.withLock { s in
            guard let last = s.groups[key]?.last, last.expires > now else { return nil }
            return last
        }
    }

    /// Whether `hash` was ever a history dictionary of this process (or loaded from the store).
    public func knows(_ hash: DictionaryHash) -> Bool { state.withLock { $0.known.contains(hash) } }

    /// The verdict for `hash` named by a request of `partition` for `path` at `now`.
    public func verdict(_ hash: DictionaryHash, partition: String, path: Substring, now: Date) -> Verdict {
        state.withLock { s in
            guard s.known.contains(hash) else { return .notHistory }
            guard let member = Self.members(of: hash, in: s, now: now).first(where: {
                $0.key.partition == partition && $0.pattern.matches(path: path)
            }) else { return .refused }
            return .allowed(DictionaryCandidate(hash: hash, pattern: member.pattern), member)
        }
    }

    /// The unexpired members holding `hash` (for serving the dictionary URL).
    public func members(of hash: DictionaryHash, now: Date) -> [Member] {
        state.withLock { s in Self.members(of: hash, in: s, now: now) }
    }

    private static func members(of hash: DictionaryHash, in s: State, now: Date) -> [Member] {
        var found: [Member] = []
        for key in s.holders[hash] ?? [] {
            for m in s.groups[key] ?? [] where m.hash == hash && m.expires > now { found.append(m) }
        }
        return found
    }

    /// Drops expired members of every group (housekeeping); returns how many groups still hold one.
    @discardableResult
    public func pruneExpired(now: Date) -> Int {
        state.withLock { s in
            for (key, list) in s.groups { s.setGroup(key, list.filter { $0.expires > now }) }
            return s.groups.count
        }
    }

    /// The history rules' settings the index needs to place a store record: its `keep` and group pattern.
    typealias RuleShapes = [String: (keep: Int, group: HistoryGroupPattern)]

    /// Rebuilds the index from the store's records of `rules` (history rule names): each record is
    /// a member of (rule, group from its `id`, partition) until its `expires`, newest by first served
    /// last. Records that cannot be placed are still `known` (refused, never looked up by hash alone).
    func load(from store: any DictionaryStore, rules: RuleShapes, now: Date) {
        var records: [DictionaryMetadata] = []
        for m in store.records where m.rule.map({ rules[$0] != nil }) ?? false { records.append(m) }  // every partition's
        records.sort { $0.firstServed < $1.firstServed }
        for m in records { learn(m, rules: rules, now: now) }
    }

    /// Adds the store record `m` of a history rule (built by this or another instance sharing the
    /// store) as a member of its group, in order of build date: a member the group already holds
    /// is left as it is, and one older than the group's newest is placed before it. Records of
    /// other rules are ignored; one that cannot be placed is still `known`.
    func learn(_ m: DictionaryMetadata, rules: RuleShapes, now: Date) {
        guard let rule = m.rule, let settings = rules[rule], let hash = DictionaryHash(hex: m.hash) else { return }
        state.withLock { _ = $0.known.insert(hash) }
        guard let id = m.id, let pattern = m.pattern, let expires = m.expires, let source = m.sourcePath,
              let group = settings.group.value(in: Substring(source + "/")) else { return }
        let member = Member(key: GroupKey(rule: rule, group: String(group), partition: m.partition ?? ""), hash: hash,
                            pattern: pattern, id: id, expires: expires, built: m.firstServed)
        state.withLock { s in
            var list = s.groups[member.key] ?? []
            guard !list.contains(where: { $0.hash == member.hash }), expires > now else { return }
            list.removeAll { $0.expires <= now }
            list.insert(member, at: list.firstIndex { $0.built > member.built } ?? list.endIndex)
            if list.count > settings.keep { list.removeFirst(list.count - settings.keep) }
            s.setGroup(member.key, list)
        }
    }
}
