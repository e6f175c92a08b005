import DictionaryTransportFields
import Foundation

/// Chooses the one dictionary a request advertises (RFC 9842 §2.2.3). Pure; thread-safe.
///
/// Candidates: same partition and origin as the request, not expired, `match` matching the request
/// path, `match-dest` empty or naming the request's destination. Precedence: a `match-dest` naming the
/// destination beats an empty one; then the longest `match` string; then the most recently fetched;
/// then (for determinism) the smaller hash.
public enum DictionarySelector {
    public struct Choice: Sendable {
        public let dictionary: StoredDictionary
        /// Human-readable reason (shown by `dcserve fetch -v`).
        public let reason: String
        /// How many dictionaries matched.
        public let candidateCount: Int
    }

    public static func select(
        from entries: [StoredDictionary], target: ClientRequestTarget, destination: String, now: Date
    ) -> Choice? {
        let path = target.path
        let candidates = entries.filter { entry in
            guard entry.origin == target.origin, !entry.isExpired(at: now) else { return false }
            guard entry.matchDestinations.isEmpty || entry.matchDestinations.contains(destination) else { return false }
            guard let base = ClientRequestTarget(url: entry.sourceURL)?.patternBase,
                  let pattern = try? URLPattern(entry.match, base: base) else { return false }
            return pattern.matches(path: path)
        }
        func rank(_ a: StoredDictionary, _ b: StoredDictionary) -> Bool {
            let aDest = !a.matchDestinations.isEmpty, bDest = !b.matchDestinations.isEmpty
            if aDest != bDest { return aDest }
            if a.match.count != b.match.count { return a.match.count > b.match.count }
            if a.fetchedAt != b.fetchedAt { return a.fetchedAt > b.fetchedAt }
            return a.hashHex < b.hashHex
        }
        guard let best = candidates.min(by: rank) else { return nil }
        var reason = "match \(best.match.debugDescription) matches \(path)"
        if !best.matchDestinations.isEmpty { reason += ", match-dest names \(destination.debugDescription)" }
        if candidates.count > 1 {
            reason += "; chosen among \(candidates.count) candidates (match-dest naming the destination, then longest match, then most recently fetched)"
        }
        return Choice(dictionary: best, reason: reason, candidateCount: candidates.count)
    }
}
