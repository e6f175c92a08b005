import DictionaryCodec
import DictionaryTransport
import Foundation
import HTTPServer
import Logging

extension DCServeConfiguration {
    /// Fetch destinations (WHATWG Fetch) a `match-dest` may name; `""` is fetch()/XHR.
    static let fetchDestinations: Set<String> = [
        "", "audio", "audioworklet", "document", "embed", "font", "frame", "iframe", "image", "json",
        "manifest", "object", "paintworklet", "report", "script", "serviceworker", "sharedworker",
        "style", "track", "video", "webidentity", "worker", "xslt",
    ]

    /// Valid level ranges per coding (dcb needs quality >= 5 for brotli to use the dictionary).
    static let levelRanges: [ContentCoding: ClosedRange<Int>] = [
        .dcz: 1...22, .zstd: 1...22, .dcb: 5...11, .br: 0...11, .gzip: 1...9,
    ]

    /// Checks ranges and cross-field rules; throws the first problem as a `ConfigurationError`.
    /// URL patterns must be path patterns (starting with `/`) that `URLPattern.validateServed` accepts
    /// (valid, and able to match what they say).
    public func validate() throws {
        func check(_ ok: Bool, _ key: String, _ reason: String) throws {
            if !ok { throw ConfigurationError(key: key, reason) }
        }
        try check((0...65_535).contains(server.port), "server.port", "must be 0…65535 (0 picks a free port)")
        try check(!server.host.isEmpty, "server.host", "must not be empty")
        try validateServerLimits()
        try validateTLS()
        try check(!site.root.isEmpty, "site.root", "must name the document root")
        try check(!store.path.isEmpty, "store.path", "must name the dictionary store directory")
        try SettingRange.check(store.maxBytes, in: 1...SettingRange.maxBytes, key: "store.maxBytes", "bytes")
        try SettingRange.check(store.maxEntriesPerRule, in: 1...1_000_000, key: "store.maxEntriesPerRule", "dictionaries")
        try SettingRange.check(store.retainAfterExpirySeconds, in: 0...SettingRange.maxAgeSeconds,
                               key: "store.retainAfterExpirySeconds", "seconds")
        try validatePostgresStore()
        try validateExperiment()
        try check(!compression.preference.isEmpty, "compression.preference", "must list at least one coding")
        try check(Set(compression.preference).count == compression.preference.count, "compression.preference", "lists a coding twice")
        try SettingRange.check(compression.minimumBytes, in: 0...SettingRange.maxBytes, key: "compression.minimumBytes", "bytes")
        if let bytes = compression.variantCacheBytes {
            try SettingRange.check(bytes, in: 0...SettingRange.maxBytes, key: "compression.variantCacheBytes", "bytes")
        }
        if let bytes = compression.dictionaryMemoryBytes {
            try SettingRange.check(bytes, in: 0...SettingRange.maxBytes, key: "compression.dictionaryMemoryBytes", "bytes")
        }
        for (coding, range) in Self.levelRanges {
            for (kind, levels) in [("fast", compression.fastLevels), ("best", compression.bestLevels)] {
                if let level = levels[coding] {
                    try check(range.contains(level), "compression.levels.\(coding).\(kind)", "must be \(range.lowerBound)…\(range.upperBound)")
                }
            }
        }
        try check((0...65_535).contains(admin.port), "admin.port", "must be 0…65535 (0 picks a free port)")
        try check(!admin.host.isEmpty, "admin.host", "must not be empty")
        for name in admin.allowedHosts {
            try check(!name.isEmpty && name.unicodeScalars.allSatisfy { $0.isASCII && $0.value > 0x20 && !"/:[]@,".unicodeScalars.contains($0) },
                      "admin.allowedHosts", "\(name.debugDescription) is not a host name (no port, no spaces; * allows every name)")
        }
        for (key, path) in [("admin.metricsPath", admin.metricsPath), ("health.livenessPath", health.livenessPath),
                            ("health.readinessPath", health.readinessPath)] {
            try check(path.hasPrefix("/"), key, "must be a path starting with /")
        }
        try check(health.livenessPath != health.readinessPath, "health.readinessPath", "must differ from health.livenessPath")
        var names = Set<String>()
        for rule in rules {
            let k = "dictionaries.\(rule.name)"
            try check(names.insert(rule.name).inserted, k, "rule name used twice")
            try check(rule.maxAgeSeconds > 0, "\(k).maxAge", "must be positive: browsers ignore dictionaries that are not fresh")
            try SettingRange.check(rule.maxAgeSeconds, in: 1...SettingRange.maxAgeSeconds, key: "\(k).maxAge", "seconds")
            for dest in rule.matchDest {
                try check(Self.fetchDestinations.contains(dest), "\(k).matchDest", "\"\(dest)\" is not a Fetch destination")
            }
            if case .fixed(let id) = rule.id { try checkID(id, key: "\(k).id") }
            try checkPattern(rule.match, key: "\(k).match")
            try checkPattern(rule.resources, key: "\(k).resources")
            for pattern in rule.compress { try checkPattern(pattern, key: "\(k).compress") }
            try checkLiveSettings(rule, key: k)
            try checkHistorySettings(rule, key: k)
        }
        for entry in outOfBand {
            let k = "outOfBand.\(entry.name)"
            try SettingRange.check(entry.maxAgeSeconds, in: 1...SettingRange.maxAgeSeconds, key: "\(k).maxAge", "seconds")
            try check(entry.path.hasPrefix("/"), "\(k).path", "must be an absolute path starting with /")
            for dest in entry.matchDest {
                try check(Self.fetchDestinations.contains(dest), "\(k).matchDest", "\"\(dest)\" is not a Fetch destination")
            }
            if let id = entry.id { try checkID(id, key: "\(k).id") }
            try checkPattern(entry.match, key: "\(k).match")
            try checkPattern(entry.advertiseOn, key: "\(k).advertiseOn")
            try check(FileManager.default.isReadableFile(atPath: entry.file), "\(k).file", "\(entry.file) is not a readable file")
        }
        try validateUpstreamsAndRoutes()
    }

    /// `server.*` durations, sizes, counts and the log level.
    private func validateServerLimits() throws {
        try SettingRange.check(server.maxConnections, in: 1...1_000_000, key: "server.maxConnections", "connections")
        try SettingRange.check(server.maxRequestsPerConnection, in: 1...1_000_000_000, key: "server.maxRequestsPerConnection", "requests")
        try SettingRange.check(server.maxBodyBytes, in: 0...SettingRange.maxBytes, key: "server.maxBodyBytes", "bytes")
        try SettingRange.check(server.memoryBytes, in: (16 << 20)...SettingRange.maxBytes, key: "server.memoryBytes", "bytes")
        if let loops = server.eventLoops {
            try SettingRange.check(loops, in: 1...256, key: "server.eventLoops", "event loops")
        }
        try SettingRange.checkSeconds(server.idleTimeoutSeconds, key: "server.idleTimeoutSeconds")
        try SettingRange.checkSeconds(server.headerTimeoutSeconds, key: "server.headerTimeoutSeconds")
        try SettingRange.checkSeconds(server.bodyTimeoutSeconds, key: "server.bodyTimeoutSeconds")
        try SettingRange.checkSeconds(server.writeTimeoutSeconds, key: "server.writeTimeoutSeconds")
        try SettingRange.checkSeconds(server.shutdownDeadlineSeconds, key: "server.shutdownDeadlineSeconds", zeroAllowed: true)
        if Logger.Level(rawValue: server.logLevel) == nil {
            throw ConfigurationError(key: "server.logLevel", "\"\(server.logLevel)\" is not one of trace, debug, info, notice, warning, error, critical")
        }
    }

    /// `tls.*`, `server.redirectToHTTPS`, `server.trustedProxies`.
    private func validateTLS() throws {
        func check(_ ok: Bool, _ key: String, _ reason: String) throws {
            if !ok { throw ConfigurationError(key: key, reason) }
        }
        for proxy in server.trustedProxies {
            try check(TrustedProxies.isAddressLiteral(proxy), "server.trustedProxies", "\"\(proxy)\" is not an IPv4 or IPv6 address")
        }
        try check(!server.redirectToHTTPS || tls.isEnabled, "server.redirectToHTTPS", "needs the HTTPS listener (tls.certificate and tls.key)")
        try check((tls.certificate == nil) == (tls.key == nil), tls.certificate == nil ? "tls.certificate" : "tls.key",
                  "tls.certificate and tls.key go together")
        try SettingRange.checkSeconds(tls.handshakeTimeoutSeconds, key: "tls.handshakeTimeoutSeconds")
        guard tls.isEnabled else { return }
        try check((0...65_535).contains(tls.port), "tls.port", "must be 0…65535 (0 picks a free port)")
        try check(tls.port == 0 || tls.port != server.port, "tls.port", "must differ from server.port")
        try check(tls.host.map { !$0.isEmpty } ?? true, "tls.host", "must not be empty")
        for (key, file) in [("tls.certificate", tls.certificate), ("tls.key", tls.key)] {
            try check(FileManager.default.isReadableFile(atPath: file ?? ""), key, "\(file ?? "") is not a readable file")
        }
        var serverNames = Set<String>()
        for entry in tls.sni {
            let k = "tls.sni.\(entry.name)"
            try check(!entry.serverName.isEmpty && serverNames.insert(entry.serverName.lowercased()).inserted,
                      "\(k).serverName", "must be a server name not used by another entry")
            try check(FileManager.default.isReadableFile(atPath: entry.certificate), "\(k).certificate", "\(entry.certificate) is not a readable file")
            try check(FileManager.default.isReadableFile(atPath: entry.key), "\(k).key", "\(entry.key) is not a readable file")
        }
    }

    private func checkPattern(_ pattern: String, key: String) throws {
        do {
            try URLPattern.validateServed(pattern)
        } catch {
            throw ConfigurationError(key: key, error.description)
        }
    }

    private func checkID(_ id: String, key: String) throws {
        guard id.utf8.count <= 1024, id.utf8.allSatisfy({ (0x20...0x7e).contains($0) }) else {
            throw ConfigurationError(key: key, "must be at most 1024 printable ASCII characters")
        }
    }
}
