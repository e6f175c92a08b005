extension DCServeConfiguration {
    /// Validates a rule's live-response settings, naming the bad key.
    func checkLiveSettings(_ rule: DictionaryRule, key k: String) throws {
        if let n = rule.upstreamVersions {
            try SettingRange.check(n, in: 1...1000, key: "\(k).upstreamVersions", "versions")
        }
        if let ttl = rule.ttlSeconds {
            try SettingRange.check(ttl, in: 1...SettingRange.maxAgeSeconds, key: "\(k).ttl", "seconds")
        }
        if case .cacheControl(let value) = rule.lifetime {
            guard !value.isEmpty, value.allSatisfy({ $0.isASCII && ($0 == " " || !$0.isWhitespace) && $0 != "\r" && $0 != "\n" }) else {
                throw ConfigurationError(key: "\(k).lifetime", "must be \"auto\", \"maxAge\", \"upstream\" or a Cache-Control value (ASCII, one line)")
            }
            guard DictionaryCacheControl(value).allowsUseAsDictionary else {
                throw ConfigurationError(key: "\(k).lifetime", "\"\(value)\" does not let clients use the response as a dictionary (needs max-age > 0 or stale-while-revalidate > 0, no no-store/no-cache)")
            }
        }
        switch rule.partition {
        case .header(let name)?, .cookie(let name)?, .upstreamHeader(let name)?:
            guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_!#$%&'*+.^`|~".contains($0)) }) else {
                throw ConfigurationError(key: "\(k).partition", "\"\(name)\" is not a valid header or cookie name")
            }
        case nil: break
        }
        if rule.partition != nil, store.kind == .postgres, partitionSecret == nil {
            // Each instance would generate its own secret in its local cache: partition ids would differ
            // between instances and per-user deltas would never survive a hop to another instance.
            throw ConfigurationError(key: "dictionaries.partitionSecret",
                                     "required when a rule has `partition` and store.kind is postgres (every instance must derive the same partition ids); set the same secret of at least 16 bytes on every instance")
        }
        if let secret = partitionSecret {
            guard secret.utf8.count >= 16 else {
                throw ConfigurationError(key: "dictionaries.partitionSecret", "must be at least 16 bytes")
            }
        }
    }
}
