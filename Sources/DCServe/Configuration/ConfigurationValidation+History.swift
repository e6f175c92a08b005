extension DCServeConfiguration {
    /// Validates a history rule, naming the bad key: `match` has exactly one `:name`
    /// group as a whole path segment after fixed text, the partition (if any) comes from the request,
    /// and the sizes and times are in range.
    func checkHistorySettings(_ rule: DictionaryRule, key k: String) throws {
        guard let h = rule.history else { return }
        _ = try HistoryGroupPattern.configured(rule.match, key: "\(k).match")
        if rule.upstreamVersions != nil {
            throw ConfigurationError(key: "\(k).upstreamVersions", "a history rule builds its own dictionaries: remove upstreamVersions (or history)")
        }
        if case .upstreamHeader? = rule.partition {
            throw ConfigurationError(key: "\(k).partition", "a history rule needs a partition the dictionary request carries too: use header or cookie, not upstreamHeader")
        }
        try SettingRange.check(h.maxDictionaryBytes, in: 256...(16 << 20), key: "\(k).history.maxBytes", "bytes")
        try SettingRange.check(h.windowBytes, in: h.maxDictionaryBytes...(64 << 20), key: "\(k).history.windowBytes",
                               "bytes (at least history.maxBytes)")
        try SettingRange.check(h.firstBuildBytes, in: 1...(64 << 20), key: "\(k).history.firstBuildBytes", "bytes")
        try SettingRange.check(h.rebuildBytes, in: 1...(64 << 20), key: "\(k).history.rebuildBytes", "bytes")
        try SettingRange.check(h.rebuildSeconds, in: 1...SettingRange.maxAgeSeconds, key: "\(k).history.rebuildSeconds", "seconds")
        try SettingRange.check(h.lifetimeSeconds, in: 1...SettingRange.maxAgeSeconds, key: "\(k).history.lifetimeSeconds", "seconds")
        try SettingRange.check(h.keep, in: 1...64, key: "\(k).history.keep", "dictionaries")
        try SettingRange.check(h.maxGroups, in: 1...1_000_000, key: "\(k).history.maxGroups", "groups")
        try SettingRange.check(h.buildMillisecondsPerMinute, in: 1...60_000, key: "\(k).history.buildMillisecondsPerMinute",
                               "milliseconds")
    }
}
