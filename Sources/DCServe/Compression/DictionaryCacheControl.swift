import Foundation
import HTTPCore

/// The `Cache-Control` directives that decide whether a client may keep a response as a dictionary
/// (RFC 9842 §2.2, Chromium: the response must be fresh or allowed to be served stale).
///
/// A value type read from one field value by ``CacheControlDirectives``: unknown directives are
/// ignored, a repeated one's last occurrence wins, an argument is delta-seconds with any double quotes
/// around it removed.
struct DictionaryCacheControl: Equatable {
    var maxAge: Int?
    var staleWhileRevalidate: Int?
    var noStore = false
    var noCache = false
    var mustRevalidate = false
    var isPrivate = false

    init(_ value: String) {
        for directive in value.cacheControlDirectives {
            let name = directive.name.lowercased()
            let argument = directive.argument.flatMap { Self.deltaSeconds(String($0).trimmingCharacters(in: CharacterSet(charactersIn: "\""))) }
            switch name {
            case "max-age": maxAge = argument
            case "stale-while-revalidate": staleWhileRevalidate = argument
            case "no-store": noStore = true
            case "no-cache": noCache = true
            case "must-revalidate": mustRevalidate = true
            case "private": isPrivate = true
            default: break
            }
        }
    }

    /// RFC 9111 §1.2.2 delta-seconds: digits only (no sign, no spaces; anything else is ignored as
    /// invalid), and a value past 2^31 counts as 2^31 — so sums of directives never overflow.
    static func deltaSeconds(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        let cap = 1 << 31
        var value = 0
        for digit in text.utf8 {
            value = value * 10 + Int(digit - 48)
            if value >= cap { return cap }
        }
        return value
    }

    /// Whether a browser may register the response as a dictionary: fresh (`max-age` > 0) or
    /// stale-servable (`stale-while-revalidate` > 0 without `must-revalidate`); never with
    /// `no-store` or `no-cache`.
    var allowsUseAsDictionary: Bool {
        if noStore || noCache { return false }
        if (maxAge ?? 0) > 0 { return true }
        return (staleWhileRevalidate ?? 0) > 0 && !mustRevalidate
    }

    /// How long a client may hold the dictionary, in seconds (fresh + stale-servable time); nil when
    /// it may not use it at all.
    var usableSeconds: Int? {
        guard allowsUseAsDictionary else { return nil }
        return (maxAge ?? 0) + (mustRevalidate ? 0 : (staleWhileRevalidate ?? 0))
    }
}

