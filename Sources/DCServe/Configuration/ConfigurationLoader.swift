import Configuration
import DictionaryCodec
import Foundation

/// Loads `DCServeConfiguration` from a JSON file with environment overrides, through
/// apple/swift-configuration.
///
/// Precedence: environment (`DCSERVE_` + the key in upper snake case, e.g. `DCSERVE_SERVER_PORT=9000`,
/// arrays comma-separated) over the file over built-in defaults. swift-configuration has no arrays
/// of objects, so rules are named: `dictionaries.rules` lists the names and `dictionaries.<name>.*`
/// holds each rule (likewise `outOfBand.names` / `outOfBand.<name>.*`, `upstreams.names` /
/// `upstreams.<name>.*`, `routes.names` / `routes.<name>.*`).
///
/// Relative paths are relative to the working directory. Every key the file contains must be known (a typo is an error naming the key); every value must
/// have the right type and range. Errors are `ConfigurationError`s.
public enum ConfigurationLoader {
    public static func load(
        file: String,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) async throws -> DCServeConfiguration {
        guard FileManager.default.fileExists(atPath: file) else {
            throw ConfigurationError(key: file, "configuration file not found")
        }
        let contents: Data
        do {
            contents = try Data(contentsOf: URL(fileURLWithPath: file))
        } catch {
            throw ConfigurationError(key: file, "not valid JSON (\(error.localizedDescription))")
        }
        return try load(contents: contents, file: file, environment: environment)
    }

    /// The configuration in `contents` (the bytes of a JSON file), with exactly `load(file:)`'s
    /// semantics and errors once the file is read; `file` only names the source in errors (e.g.
    /// "not valid JSON"). Synchronous, no file system access of its own: the fuzzer's entry point.
    public static func load(
        contents: some DataProtocol,
        file: String = "(configuration)",
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> DCServeConfiguration {
        let data = Data(contents)
        let json: Any
        do {
            json = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw ConfigurationError(key: file, "not valid JSON (\(error.localizedDescription))")
        }
        try ConfigurationSchema.checkKnownKeys(json)

        let env = KeyMappingProvider(upstream: EnvironmentVariablesProvider(environmentVariables: environment)) {
            $0.prepending(["dcserve"])
        }
        let fileProvider = try JSONContentsProvider(contents: data)
        let reader = ConfigValues(ConfigReader(providers: [env, fileProvider]))
        let configuration = try read(reader)
        try configuration.validate()
        return configuration
    }

    static func read(_ r: ConfigValues) throws -> DCServeConfiguration {
        var c = DCServeConfiguration()
        c.server.host = try r.string("server.host") ?? c.server.host
        c.server.port = try r.int("server.port") ?? c.server.port
        c.server.maxConnections = try r.int("server.maxConnections") ?? c.server.maxConnections
        c.server.idleTimeoutSeconds = try r.double("server.idleTimeoutSeconds") ?? c.server.idleTimeoutSeconds
        c.server.shutdownDeadlineSeconds = try r.double("server.shutdownDeadlineSeconds") ?? c.server.shutdownDeadlineSeconds
        c.server.headerTimeoutSeconds = try r.double("server.headerTimeoutSeconds") ?? c.server.headerTimeoutSeconds
        c.server.bodyTimeoutSeconds = try r.double("server.bodyTimeoutSeconds") ?? c.server.bodyTimeoutSeconds
        c.server.writeTimeoutSeconds = try r.double("server.writeTimeoutSeconds") ?? c.server.writeTimeoutSeconds
        c.server.maxRequestsPerConnection = try r.int("server.maxRequestsPerConnection") ?? c.server.maxRequestsPerConnection
        c.server.maxBodyBytes = try r.int("server.maxBodyBytes") ?? c.server.maxBodyBytes
        c.server.eventLoops = try r.int("server.eventLoops") ?? c.server.eventLoops
        c.server.logLevel = try r.string("server.logLevel") ?? c.server.logLevel
        c.server.accessLog = try r.bool("server.accessLog") ?? c.server.accessLog
        c.server.memoryBytes = try r.int("server.memoryBytes") ?? c.server.memoryBytes
        c.server.decisionHeader = try r.bool("server.decisionHeader") ?? c.server.decisionHeader
        if let value = try r.string("server.sharedCaches") {
            guard let caches = SharedCaches(rawValue: value) else {
                throw ConfigurationError(key: "server.sharedCaches", "\"\(value)\" is not one of honourVary, ignoreVary")
            }
            c.server.sharedCaches = caches
        }
        try readTLS(r, into: &c)
        c.site.root = try r.string("site.root") ?? c.site.root
        c.store.path = try r.string("store.path") ?? c.store.path
        c.store.maxBytes = try r.int("store.maxBytes") ?? c.store.maxBytes
        c.store.maxEntriesPerRule = try r.int("store.maxEntriesPerRule") ?? c.store.maxEntriesPerRule
        c.store.retainAfterExpirySeconds = try r.int("store.retainAfterExpirySeconds") ?? c.store.retainAfterExpirySeconds
        try readPostgresStore(r, into: &c)

        if let names = try r.stringArray("compression.preference") {
            c.compression.preference = try names.map { name in
                guard let coding = ContentCoding(token: name), coding != .identity else {
                    throw ConfigurationError(key: "compression.preference", "unknown coding \"\(name)\" (use dcz, dcb, zstd, br, gzip)")
                }
                return coding
            }
        }
        c.compression.minimumBytes = try r.int("compression.minimumBytes") ?? c.compression.minimumBytes
        c.compression.variantCacheBytes = try r.int("compression.variantCacheBytes")
        c.compression.dictionaryMemoryBytes = try r.int("compression.dictionaryMemoryBytes")
        c.compression.precompress = try r.bool("compression.precompress") ?? c.compression.precompress
        c.compression.serverTiming = try r.bool("compression.serverTiming") ?? c.compression.serverTiming
        c.compression.compareSmallBodies = try r.bool("compression.compareSmallBodies") ?? c.compression.compareSmallBodies
        c.admin.enabled = try r.bool("admin.enabled") ?? c.admin.enabled
        c.admin.host = try r.string("admin.host") ?? c.admin.host
        c.admin.port = try r.int("admin.port") ?? c.admin.port
        c.admin.metricsPath = try r.string("admin.metricsPath") ?? c.admin.metricsPath
        c.admin.allowedHosts = try r.stringArray("admin.allowedHosts") ?? c.admin.allowedHosts
        c.health.livenessPath = try r.string("health.livenessPath") ?? c.health.livenessPath
        c.health.readinessPath = try r.string("health.readinessPath") ?? c.health.readinessPath
        c.health.accessLog = try r.bool("health.accessLog") ?? c.health.accessLog
        for coding in ContentCoding.allCases where coding != .identity {
            if let level = try r.int("compression.levels.\(coding).fast") { c.compression.fastLevels[coding] = level }
            if let level = try r.int("compression.levels.\(coding).best") { c.compression.bestLevels[coding] = level }
        }

        for name in try r.stringArray("dictionaries.rules") ?? [] {
            let k = "dictionaries.\(name)"
            guard let match = try r.string("\(k).match") else {
                throw ConfigurationError(key: "\(k).match", "required: the URL pattern clients match requests against")
            }
            var rule = DictionaryRule(
                name: name, match: match,
                resources: try r.string("\(k).resources"), compress: try r.stringArray("\(k).compress"))
            rule.matchDest = try r.stringArray("\(k).matchDest") ?? []
            switch try r.string("\(k).id") {
            case nil, "": rule.id = .none
            case "$path": rule.id = .path
            case let fixed?: rule.id = .fixed(fixed)
            }
            let maxAge = try r.int("\(k).maxAge")
            rule.maxAgeSeconds = maxAge ?? rule.maxAgeSeconds
            rule.allowPrivate = try r.bool("\(k).allowPrivate") ?? false
            rule.upstreamVersions = try r.int("\(k).upstreamVersions")
            if let lifetime = try r.string("\(k).lifetime") {
                rule.lifetime = DictionaryLifetime(configured: lifetime)
            } else if maxAge != nil {
                rule.lifetime = .maxAge  // a max-age the operator wrote applies to proxied responses too
            }
            rule.ttlSeconds = try r.int("\(k).ttl")
            if let name = try r.string("\(k).partition.header") { rule.partition = .header(name) }
            if let name = try r.string("\(k).partition.cookie") { rule.partition = .cookie(name) }
            if let name = try r.string("\(k).partition.upstreamHeader") { rule.partition = .upstreamHeader(name) }
            rule.history = try readHistory(r, key: "\(k).history")
            c.rules.append(rule)
        }

        c.partitionSecret = try r.string("dictionaries.partitionSecret")
        c.experiment = try readExperiment(r)
        try readUpstreamsAndRoutes(r, into: &c)
        for name in try r.stringArray("outOfBand.names") ?? [] {
            let k = "outOfBand.\(name)"
            func required(_ field: String, _ what: String) throws -> String {
                guard let v = try r.string("\(k).\(field)") else { throw ConfigurationError(key: "\(k).\(field)", "required: \(what)") }
                return v
            }
            var entry = OutOfBandDictionary(
                name: name, file: try required("file", "the dictionary file"),
                path: try required("path", "the path dcserve serves the dictionary at"),
                match: try required("match", "the URL pattern the dictionary applies to"),
                advertiseOn: try required("advertiseOn", "the pages that carry the Link header"))
            entry.matchDest = try r.stringArray("\(k).matchDest") ?? []
            entry.id = try r.string("\(k).id")
            entry.maxAgeSeconds = try r.int("\(k).maxAge") ?? entry.maxAgeSeconds
            if let origin = try r.string("\(k).allowOrigin") { entry.allowOrigin = origin.isEmpty ? nil : origin }
            c.outOfBand.append(entry)
        }
        return c
    }
}

extension ConfigurationLoader {
    /// `dictionaries.<rule>.history.*`; nil when the rule has no `history` object.
    static func readHistory(_ r: ConfigValues, key k: String) throws -> HistoryDictionarySettings? {
        var h = HistoryDictionarySettings()
        let enabled = try r.bool("\(k).enabled")
        if enabled == false { return nil }
        var present = enabled ?? false
        func int(_ field: String, _ into: inout Int) throws {
            if let v = try r.int("\(k).\(field)") { into = v; present = true }
        }
        try int("maxBytes", &h.maxDictionaryBytes)
        try int("windowBytes", &h.windowBytes)
        try int("firstBuildBytes", &h.firstBuildBytes)
        try int("rebuildBytes", &h.rebuildBytes)
        try int("rebuildSeconds", &h.rebuildSeconds)
        try int("lifetimeSeconds", &h.lifetimeSeconds)
        try int("keep", &h.keep)
        try int("maxGroups", &h.maxGroups)
        try int("buildMillisecondsPerMinute", &h.buildMillisecondsPerMinute)
        return present ? h : nil
    }

    /// `tls.*`, `server.redirectToHTTPS`, `server.trustedProxies`.
    static func readTLS(_ r: ConfigValues, into c: inout DCServeConfiguration) throws {
        c.server.redirectToHTTPS = try r.bool("server.redirectToHTTPS") ?? c.server.redirectToHTTPS
        c.server.trustedProxies = try r.stringArray("server.trustedProxies") ?? c.server.trustedProxies
        c.tls.host = try r.string("tls.host") ?? c.tls.host
        c.tls.port = try r.int("tls.port") ?? c.tls.port
        c.tls.certificate = try r.string("tls.certificate") ?? c.tls.certificate
        c.tls.key = try r.string("tls.key") ?? c.tls.key
        c.tls.handshakeTimeoutSeconds = try r.double("tls.handshakeTimeoutSeconds") ?? c.tls.handshakeTimeoutSeconds
        for name in try r.stringArray("tls.sni.names") ?? [] {
            let k = "tls.sni.\(name)"
            func required(_ field: String, _ what: String) throws -> String {
                guard let v = try r.string("\(k).\(field)") else { throw ConfigurationError(key: "\(k).\(field)", "required: \(what)") }
                return v
            }
            c.tls.sni.append(DCServeConfiguration.SNICertificate(
                name: name, serverName: try required("serverName", "the server name clients ask for"),
                certificate: try required("certificate", "the PEM certificate chain"), key: try required("key", "the PEM private key")))
        }
    }
}

/// Typed reads that tell "absent" (nil) from "present but wrong" (a `ConfigurationError` naming the key).
struct ConfigValues {
    let reader: ConfigReader
    init(_ reader: ConfigReader) { self.reader = reader }

    private func get<T>(_ key: String, _ kind: String, _ body: (ConfigKey) throws -> T) throws -> T? {
        do {
            return try body(ConfigKey(key))
        } catch {
            if "\(error)".hasPrefix("Missing required config value") { return nil }
            throw ConfigurationError(key: key, "must be \(kind)")
        }
    }

    func string(_ key: String) throws -> String? { try get(key, "a string") { try reader.requiredString(forKey: $0) } }
    func int(_ key: String) throws -> Int? { try get(key, "an integer") { try reader.requiredInt(forKey: $0) } }
    func double(_ key: String) throws -> Double? { try get(key, "a number") { try reader.requiredDouble(forKey: $0) } }
    func bool(_ key: String) throws -> Bool? { try get(key, "true or false") { try reader.requiredBool(forKey: $0) } }
    func stringArray(_ key: String) throws -> [String]? {
        try get(key, "an array of strings") { try reader.requiredStringArray(forKey: $0) }
    }
}
