import Foundation
import HTTPFieldValues
import HTTPTypes

/// How long a dictionary response may be used, decided once at registration (Chromium, measured;
/// RFC 9111 §4.2): freshness lifetime + `stale-while-revalidate` − current age.
///
/// - freshness: `max-age`, else `Expires` − `Date` (or − now without `Date`); no heuristic
///   freshness: a response with neither is not stored.
/// - age: max(`Age`, now − `Date`, 0).
/// - `no-store`, `no-cache`, and `must-revalidate` without `stale-while-revalidate` → not stored.
/// - a lifetime ≤ 0 → not stored.
/// - `ttl` (the `Use-As-Dictionary` member, seconds) replaces the HTTP lifetime when present; `no-store`
///   still wins.
///
/// Pure; thread-safe.
public enum DictionaryLifetime {
    public enum Outcome: Hashable, Sendable {
        case storable(seconds: Double)
        case notStorable(String)
    }

    public static func compute(fields: HTTPFields, ttl: Int? = nil, now: Date) -> Outcome {
        let directives = CacheControl(fields[values: .cacheControl].joined(separator: ","))
        if directives.has("no-store") { return .notStorable("Cache-Control: no-store") }
        if let ttl {
            return ttl > 0 ? .storable(seconds: Double(ttl)) : .notStorable("ttl=\(ttl) is not positive")
        }
        if directives.has("no-cache") { return .notStorable("Cache-Control: no-cache") }
        let swr = directives.seconds("stale-while-revalidate") ?? 0
        if directives.has("must-revalidate"), swr == 0 {
            return .notStorable("Cache-Control: must-revalidate without stale-while-revalidate")
        }
        let date = fields[.date].flatMap(HTTPDateParser.parse)
        let freshness: Double
        if directives.has("max-age") {
            freshness = directives.seconds("max-age") ?? 0
        } else if let expiresText = fields[.expires] {
            guard let expires = HTTPDateParser.parse(expiresText) else { return .notStorable("Expires is not a valid date") }
            freshness = expires.timeIntervalSince(date ?? now)
        } else {
            return .notStorable("no freshness lifetime (neither Cache-Control max-age nor Expires)")
        }
        var age = 0.0
        if let text = fields[.age], let value = Int(text.trimmingCharacters(in: .whitespaces)), value >= 0 { age = Double(value) }
        if let date { age = max(age, now.timeIntervalSince(date)) }
        let lifetime = freshness + swr - age
        guard lifetime > 0 else {
            return .notStorable("stale on arrival (freshness \(Int(freshness)) s + stale-while-revalidate \(Int(swr)) s − age \(Int(age)) s ≤ 0)")
        }
        return .storable(seconds: lifetime)
    }
}

/// `Cache-Control` directives (read by ``CacheControlDirectives``) by lower-cased name, quoted
/// arguments unquoted. The first occurrence of a directive wins.
struct CacheControl {
    private var directives: [String: String?] = [:]

    init(_ value: String) {
        for directive in value.cacheControlDirectives {
            let name = directive.name.lowercased()
            if directives[name] == nil { directives[name] = .some(directive.unquotedArgument.map(String.init)) }
        }
    }

    func has(_ name: String) -> Bool { directives[name] != nil }

    /// A delta-seconds argument; an invalid one reads as 0 (RFC 9111 §1.2.2: treat as stale).
    func seconds(_ name: String) -> Double? {
        guard let entry = directives[name] else { return nil }
        guard let text = entry, !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return 0 }
        return Double(text.prefix(10)) ?? 0
    }
}

/// Parses IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the only HTTP-date form senders generate,
/// with the shared byte parser (HTTPFieldValues) (Foundation's DateFormatter traps on some non-ASCII input: an
/// upstream's `Date` of `Sun, 06 Nov 1` + bytes 0xDF 0xAD… crashed `dcserve fetch`).
enum HTTPDateParser {
    static func parse(_ text: String) -> Date? {
        HTTPDate.parse(String(text.trimmingOWS())).map { Date(timeIntervalSince1970: TimeInterval($0)) }
    }
}
