import DictionaryCodec
import DictionaryTransport

/// The configuration's dictionary rules and out-of-band dictionaries, with their URL patterns
/// compiled once at start-up. Immutable and `Sendable`: shared by every request.
public struct DictionaryRuleSet: Sendable {
    /// One rule, compiled.
    public struct Rule: Sendable {
        public let name: String
        public let resources: URLPattern
        public let match: URLPattern
        public let matchDest: [String]
        public let id: DictionaryRule.IDSource
        public let maxAgeSeconds: Int
        public let compress: [URLPattern]
        public let allowPrivate: Bool
        /// The rule's own `allowPrivate` (``allowPrivate`` is also true for every partitioned rule): a
        /// partitioned rule's anonymous partition takes credentialed or private exchanges only then
        /// (``AnonymousPartitionSafeguard``).
        public let allowsPrivateWhenAnonymous: Bool
        /// Live responses: versions kept per URL (nil = unlimited), see ``LiveVersionIndex``.
        public let upstreamVersions: Int?
        public let lifetime: DictionaryLifetime
        public let ttlSeconds: Int?
        /// Private rule: where each request's partition comes from.
        public let partition: DictionaryPartitionSource?

        /// History rule: dictionaries built per group from recent bodies (nil otherwise).
        public let history: HistoryDictionarySettings?
        /// The `:group` of a history rule's `match`.
        let historyGroup: HistoryGroupPattern?

        /// Whether this rule's dictionaries are looked up by (partition, hash) through the live index.
        /// (History rules have their own index, ``HistoryDictionaryIndex``.)
        public var isLive: Bool { (upstreamVersions != nil || partition != nil) && history == nil }

        /// The `Use-As-Dictionary` value for a dictionary served at `path`.
        public func advertisement(path: Substring) -> UseAsDictionary {
            let id: DictionaryID? = switch self.id {
            case .none: nil
            case .fixed(let value): DictionaryID(value)
            case .path: DictionaryID(String(path))
            }
            return UseAsDictionary(match: match.source, matchDestinations: matchDest, id: id)
        }
    }

    public let rules: [Rule]
    /// Patterns of resources compressible against out-of-band dictionaries (their `match`).
    public let outOfBandCompress: [(pattern: URLPattern, name: String)]
    /// Whether any rule is live / a history rule: the lookups for those kinds are skipped when none is
    /// (they run on every request).
    let hasLiveRules: Bool, hasHistoryRules: Bool

    /// Compiles the configuration's patterns; throws `ConfigurationError` naming the bad key.
    public init(rules: [DictionaryRule], outOfBand: [OutOfBandDictionary]) throws {
        func compile(_ p: String, _ key: String) throws -> URLPattern {
            do { return try URLPattern(p, base: nil) } catch { throw ConfigurationError(key: key, error.description) }
        }
        self.rules = try rules.map { r in
            Rule(name: r.name,
                 resources: try compile(r.resources, "dictionaries.\(r.name).resources"),
                 match: try compile(r.match, "dictionaries.\(r.name).match"),
                 matchDest: r.matchDest, id: r.id, maxAgeSeconds: r.maxAgeSeconds,
                 compress: try r.compress.map { try compile($0, "dictionaries.\(r.name).compress") },
                 allowPrivate: r.allowPrivate || r.partition != nil, allowsPrivateWhenAnonymous: r.allowPrivate,
                 upstreamVersions: r.upstreamVersions, lifetime: r.lifetime, ttlSeconds: r.ttlSeconds, partition: r.partition,
                 history: r.history,
                 historyGroup: r.history == nil ? nil : try HistoryGroupPattern.configured(r.match, key: "dictionaries.\(r.name).match"))
        }
        outOfBandCompress = try outOfBand.map { (try compile($0.match, "outOfBand.\($0.name).match"), $0.name) }
        hasLiveRules = self.rules.contains { $0.isLive }
        hasHistoryRules = self.rules.contains { $0.history != nil }
    }

    /// The first rule whose `resources` pattern matches `path`: responses for it become dictionaries.
    /// History rules never advertise a response itself (their dictionaries are offered with `Link`),
    /// and no rule advertises a history dictionary's own URL (``HistoryDictionaryURL``: it keeps its
    /// group's scope, id and lifetime).
    public func advertisingRule(for path: Substring) -> Rule? {
        guard let rule = rules.first(where: { $0.history == nil && $0.resources.matches(path: path) }) else { return nil }
        if hasHistoryRules && HistoryDictionaryURL.parse(path) != nil { return nil }
        return Self.namesWhatItSays(path) ? rule : nil
    }

    /// Whether rules may be matched on `path` as it was sent: no dot segment and no percent-escape of
    /// an unreserved character or of `/` or `\`. The server behind a route resolves those
    /// (`/static/../other/x`, `/static/a%2F..%2F..%2Fother/x` name `/other/x` to a file handler), so a
    /// rule matched on the raw path would cover what it does not serve: no rule covers such a path
    /// (browsers never send one; it is served, without dictionaries). Checked only once a rule matched.
    static func namesWhatItSays(_ path: Substring) -> Bool {
        let utf8 = path.utf8
        guard !RoutePath.hasDotSegment(utf8) else { return false }
        var rest = utf8[...]
        while let i = rest.firstIndex(of: UInt8(ascii: "%")) {  // the usual path has none
            let escape = rest[rest.index(after: i)...].prefix(2)
            guard escape.count == 2, let hi = RoutePath.hex(escape.first!), let lo = RoutePath.hex(escape.last!) else { return false }
            let value = hi << 4 | lo
            if RoutePath.isUnreserved(value) || value == UInt8(ascii: "/") || value == UInt8(ascii: "\\") { return false }
            rest = rest[escape.endIndex...]
        }
        return true
    }

    /// The name of the first rule whose `compress` pattern covers `path`, else of the first
    /// out-of-band dictionary whose `match` does; nil when none (for decisions and metrics).
    public func compressingRuleName(for path: Substring) -> String? {
        let name = rules.first { $0.compress.contains { $0.matches(path: path) } }?.name
            ?? outOfBandCompress.first { $0.pattern.matches(path: path) }?.name
        return name != nil && Self.namesWhatItSays(path) ? name : nil
    }

    /// The rule a decision about `path` is attributed to: the advertising rule, else the compressing one.
    public func coveringRuleName(for path: Substring) -> String? {
        advertisingRule(for: path)?.name ?? compressingRuleName(for: path)
    }

    /// The first live rule whose `compress` pattern covers `path`: there a request's partition decides
    /// which of the rule's dictionaries it may name (and an upstream's partition field is removed),
    /// also where the rule does not advertise the response itself.
    public func liveCompressingRule(for path: Substring) -> Rule? {
        guard hasLiveRules, let rule = rules.first(where: { $0.history == nil && $0.isLive && $0.compress.contains { $0.matches(path: path) } })
        else { return nil }
        return Self.namesWhatItSays(path) ? rule : nil
    }

    /// The first history rule whose `match` covers `path`.
    public func historyRule(for path: Substring) -> Rule? {
        guard hasHistoryRules, let rule = rules.first(where: { $0.history != nil && $0.match.matches(path: path) }) else { return nil }
        return Self.namesWhatItSays(path) ? rule : nil
    }

    /// The history rules, in declaration order.
    public var historyRules: [Rule] { rules.filter { $0.history != nil } }

    /// Whether stored dictionaries may be used to compress `path`: nil when no rule's `compress`
    /// pattern (and no out-of-band dictionary's `match`) covers it.
    public func dictionaryScope(for path: Substring) -> DictionaryScope? {
        var found = false, allowPrivate = false
        for rule in rules where rule.compress.contains(where: { $0.matches(path: path) }) {
            found = true
            allowPrivate = allowPrivate || rule.allowPrivate
        }
        if !found { found = outOfBandCompress.contains { $0.pattern.matches(path: path) } }
        return found && Self.namesWhatItSays(path) ? DictionaryScope(allowPrivate: allowPrivate) : nil
    }
}

/// What the rules say about compressing one path against stored dictionaries.
public struct DictionaryScope: Sendable, Equatable {
    /// A matching rule explicitly allows dictionary compression of private responses.
    public let allowPrivate: Bool
}
