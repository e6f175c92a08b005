/// How long clients may use a dictionary advertised by a rule: the `Cache-Control` of the
/// advertised response (`dictionaries.<rule>.lifetime`). Chromium registers a dictionary only when
/// the response is fresh or may be served stale, so API responses (often `no-cache`) need a policy.
/// dcserve never invents freshness silently: either the operator wrote it (`maxAge`, an explicit
/// value) or the upstream did (`upstream`, and `automatic` for proxied responses).
public enum DictionaryLifetime: Sendable, Equatable {
    /// The default: `maxAge` for static files (content-addressed: the operator's site), `upstream` for
    /// proxied responses (an API's `no-cache` is never turned into a day of freshness unasked).
    case automatic
    /// `Cache-Control: max-age=<dictionaries.<rule>.maxAge>`.
    case maxAge
    /// Keep the upstream's `Cache-Control` when it already allows use as a dictionary; otherwise the
    /// response is not advertised (and not stored).
    case upstream
    /// This exact `Cache-Control` value, chosen by the operator (e.g. `max-age=0, stale-while-revalidate=86400`).
    case cacheControl(String)

    /// Parses the configuration value: `"auto"`, `"maxAge"`, `"upstream"`, or a Cache-Control value.
    public init(configured value: String) {
        switch value {
        case "auto": self = .automatic
        case "maxAge": self = .maxAge
        case "upstream": self = .upstream
        default: self = .cacheControl(value)
        }
    }
}

/// Where a private rule's partition (one user's dictionaries) comes from (`dictionaries.<rule>.partition`).
public enum DictionaryPartitionSource: Sendable, Equatable {
    /// A request header, e.g. `Authorization` (`{"header": NAME}`).
    case header(String)
    /// A request cookie (`{"cookie": NAME}`).
    case cookie(String)
    /// A header the upstream sets on its response, removed before the client sees it (`{"upstreamHeader": NAME}`).
    case upstreamHeader(String)
}
