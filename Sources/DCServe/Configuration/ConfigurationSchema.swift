/// The keys a configuration file may contain, so a misspelt key is refused instead of ignored.
enum ConfigurationSchema {
    static let sections: [String: Set<String>] = [
        "server": ["host", "port", "maxConnections", "idleTimeoutSeconds", "shutdownDeadlineSeconds", "accessLog",
                   "redirectToHTTPS", "trustedProxies", "headerTimeoutSeconds", "bodyTimeoutSeconds", "writeTimeoutSeconds",
                   "maxRequestsPerConnection", "maxBodyBytes", "eventLoops", "logLevel", "decisionHeader", "sharedCaches", "memoryBytes"],
        "tls": ["host", "port", "certificate", "key", "sni", "handshakeTimeoutSeconds"],
        "site": ["root"],
        "store": ["path", "maxBytes", "maxEntriesPerRule", "retainAfterExpirySeconds", "kind", "postgres", "cacheMaxBytes",
                  "housekeepingSeconds", "readThreads"],
        "compression": ["preference", "minimumBytes", "variantCacheBytes", "dictionaryMemoryBytes", "precompress", "levels", "serverTiming", "compareSmallBodies"],
        "admin": ["enabled", "host", "port", "metricsPath", "allowedHosts"],
        "health": ["livenessPath", "readinessPath", "accessLog"],
        "experiment": ["controlShare", "key", "groupHeader"],
    ]
    static let ruleKeys: Set<String> = ["match", "resources", "matchDest", "id", "maxAge", "compress", "allowPrivate",
                                          "upstreamVersions", "lifetime", "ttl", "partition", "history"]
    static let partitionKeys: Set<String> = ["header", "cookie", "upstreamHeader"]
    static let historyKeys: Set<String> = ["enabled", "maxBytes", "windowBytes", "firstBuildBytes", "rebuildBytes", "rebuildSeconds", "lifetimeSeconds",
                                           "keep", "maxGroups", "buildMillisecondsPerMinute"]
    static let experimentKeyKeys: Set<String> = ["partition", "header", "cookie"]
    static let outOfBandKeys: Set<String> = ["file", "path", "match", "matchDest", "id", "maxAge", "advertiseOn", "allowOrigin"]
    static let upstreamKeys: Set<String> = [
        "servers", "connectTimeoutSeconds", "sendTimeoutSeconds", "readTimeoutSeconds", "maxIdleConnections",
        "idleTimeoutSeconds", "maxRequestsPerConnection", "failureBackoffSeconds", "host", "forwardedFor", "forwardedProto",
        "forwarded", "via", "upstreamHandlesDictionaries", "maxBufferedBodyBytes", "maxDecodedBodyBytes", "tlsCAFile",
        "forwardTrace", "tunnelIdleTimeoutSeconds",
    ]
    static let routeKeys: Set<String> = ["prefix", "upstream"]
    static let levelKeys: Set<String> = ["fast", "best"]
    static let sniKeys: Set<String> = ["serverName", "certificate", "key"]
    static let postgresKeys: Set<String> = ["url", "host", "port", "user", "password", "database", "tls", "poolSize",
                                            "connectTimeoutSeconds"]

    /// Throws `ConfigurationError` for the first key (in sorted order) the schema does not know.
    static func checkKnownKeys(_ json: Any) throws {
        guard let top = json as? [String: Any] else {
            throw ConfigurationError(key: "(top level)", "must be a JSON object")
        }
        for (section, value) in top.sorted(by: { $0.key < $1.key }) {
            switch section {
            case "dictionaries":
                var rules = try objectValue(value, key: section)
                rules["partitionSecret"] = nil  // a section-wide setting, not a rule
                try checkNamed(rules, section: section, listKey: "rules", allowed: ruleKeys)
                for (name, entry) in rules.sorted(by: { $0.key < $1.key }) where name != "rules" {
                    if let history = (entry as? [String: Any])?["history"] {
                        let key = "dictionaries.\(name).history"
                        for field in try objectValue(history, key: key).keys.sorted() where !historyKeys.contains(field) {
                            throw ConfigurationError(key: "\(key).\(field)", "unknown key (known: \(historyKeys.sorted().joined(separator: ", ")))")
                        }
                    }
                    guard let partition = (entry as? [String: Any])?["partition"] else { continue }
                    let key = "dictionaries.\(name).partition"
                    let object = try objectValue(partition, key: key)
                    for field in object.keys.sorted() where !partitionKeys.contains(field) {
                        throw ConfigurationError(key: "\(key).\(field)", "unknown key (known: cookie, header, upstreamHeader)")
                    }
                    if object.count != 1 {
                        throw ConfigurationError(key: key, "must name exactly one of header, cookie, upstreamHeader")
                    }
                }
            case "outOfBand":
                try checkNamed(value, section: section, listKey: "names", allowed: outOfBandKeys)
            case "upstreams":
                try checkNamed(value, section: section, listKey: "names", allowed: upstreamKeys)
            case "routes":
                try checkNamed(value, section: section, listKey: "names", allowed: routeKeys)
            default:
                guard let allowed = sections[section] else {
                    throw ConfigurationError(key: section, "unknown section (known: \((sections.keys.sorted() + ["dictionaries", "outOfBand", "upstreams", "routes"]).joined(separator: ", ")))")
                }
                let object = try objectValue(value, key: section)
                for key in object.keys.sorted() where !allowed.contains(key) {
                    throw ConfigurationError(key: "\(section).\(key)", "unknown key (known: \(allowed.sorted().joined(separator: ", ")))")
                }
                if section == "experiment", let key = object["key"] {
                    let keyObject = try objectValue(key, key: "experiment.key")
                    for field in keyObject.keys.sorted() where !experimentKeyKeys.contains(field) {
                        throw ConfigurationError(key: "experiment.key.\(field)", "unknown key (known: cookie, header, partition)")
                    }
                    if keyObject.count != 1 {
                        throw ConfigurationError(key: "experiment.key", "must name exactly one of partition, header, cookie")
                    }
                }
                if section == "tls", let sni = object["sni"] {
                    try checkNamed(sni, section: "tls.sni", listKey: "names", allowed: sniKeys)
                }
                if section == "store", let postgres = object["postgres"] {
                    for key in try objectValue(postgres, key: "store.postgres").keys.sorted() where !postgresKeys.contains(key) {
                        throw ConfigurationError(key: "store.postgres.\(key)", "unknown key (known: \(postgresKeys.sorted().joined(separator: ", ")))")
                    }
                }
                if section == "compression", let levels = object["levels"] {
                    for (coding, entry) in try objectValue(levels, key: "compression.levels").sorted(by: { $0.key < $1.key }) {
                        guard ["dcz", "dcb", "zstd", "br", "gzip"].contains(coding) else {
                            throw ConfigurationError(key: "compression.levels.\(coding)", "unknown coding")
                        }
                        for key in try objectValue(entry, key: "compression.levels.\(coding)").keys.sorted() where !levelKeys.contains(key) {
                            throw ConfigurationError(key: "compression.levels.\(coding).\(key)", "unknown key (known: best, fast)")
                        }
                    }
                }
            }
        }
    }

    private static func checkNamed(_ value: Any, section: String, listKey: String, allowed: Set<String>) throws {
        let object = try objectValue(value, key: section)
        let names = (object[listKey] as? [Any] ?? []).compactMap { $0 as? String }
        for (key, entry) in object.sorted(by: { $0.key < $1.key }) where key != listKey {
            guard names.contains(key) else {
                throw ConfigurationError(key: "\(section).\(key)", "not listed in \(section).\(listKey) (list it, or remove it)")
            }
            for field in try objectValue(entry, key: "\(section).\(key)").keys.sorted() where !allowed.contains(field) {
                throw ConfigurationError(key: "\(section).\(key).\(field)", "unknown key (known: \(allowed.sorted().joined(separator: ", ")))")
            }
        }
    }

    private static func objectValue(_ value: Any, key: String) throws -> [String: Any] {
        guard let object = value as? [String: Any] else { throw ConfigurationError(key: key, "must be a JSON object") }
        return object
    }
}
