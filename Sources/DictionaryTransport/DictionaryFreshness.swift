import HTTPCore
import HTTPTypes

/// Whether a dictionary response is fresh enough for clients to keep it (SPEC.md §1).
///
/// Chromium silently drops dictionaries served without `Cache-Control`, with `no-store`, `no-cache`
/// or `max-age=0`. Pure, thread-safe.
public enum DictionaryFreshness {
    /// The response's freshness lifetime in seconds (`max-age`) when a client would store it as a
    /// dictionary; nil when it would not (missing/zero/invalid `max-age`, `no-store`, `no-cache`,
    /// repeated `max-age` with different values).
    public static func lifetime(_ response: HTTPFields) -> Int? {
        var maxAges = Set<Int>()
        var sawInvalid = false
        for line in response[values: .cacheControl] {
            for directive in line.cacheControlDirectives {
                if directive.isNamed("no-store") || directive.isNamed("no-cache") { return nil }
                guard directive.isNamed("max-age") else { continue }
                let value = directive.unquotedArgument ?? ""
                if !value.isEmpty, value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
                    maxAges.insert(Int(value.prefix(10)) ?? Int.max)
                } else {
                    sawInvalid = true
                }
            }
        }
        guard !sawInvalid, maxAges.count == 1, let age = maxAges.first, age > 0 else { return nil }
        return age
    }
}
