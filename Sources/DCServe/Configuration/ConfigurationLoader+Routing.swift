import Configuration
import Foundation

extension ConfigurationLoader {
    /// `upstreams.names` + `upstreams.<name>.*`, `routes.names` + `routes.<name>.*`. A name listed
    /// twice is refused here (its keys would be read twice); everything else is `validate()`'s.
    static func readUpstreamsAndRoutes(_ r: ConfigValues, into c: inout DCServeConfiguration) throws {
        for name in try uniqueNames(r, "upstreams.names") {
            c.upstreams.append(try readUpstream(r, name: name))
        }
        for name in try uniqueNames(r, "routes.names") {
            let k = "routes.\(name)"
            guard let prefix = try r.string("\(k).prefix") else {
                throw ConfigurationError(key: "\(k).prefix", "required: the path prefix this route takes, e.g. \"/api/\"")
            }
            let upstream = try r.string("\(k).upstream")
            c.routes.append(Route(name: name, prefix: prefix, upstream: upstream?.isEmpty == true ? nil : upstream))
        }
    }

    /// `upstreams.<name>.*`.
    static func readUpstream(_ r: ConfigValues, name: String) throws -> Upstream {
        let k = "upstreams.\(name)"
        guard let servers = try r.stringArray("\(k).servers") else {
            throw ConfigurationError(key: "\(k).servers", "required: the upstream's server URLs, e.g. [\"http://127.0.0.1:8000\"]")
        }
        var u = Upstream(name: name, servers: servers)
        u.connectTimeoutSeconds = try r.double("\(k).connectTimeoutSeconds") ?? u.connectTimeoutSeconds
        u.sendTimeoutSeconds = try r.double("\(k).sendTimeoutSeconds") ?? u.sendTimeoutSeconds
        u.readTimeoutSeconds = try r.double("\(k).readTimeoutSeconds") ?? u.readTimeoutSeconds
        u.maxIdleConnections = try r.int("\(k).maxIdleConnections") ?? u.maxIdleConnections
        u.idleTimeoutSeconds = try r.double("\(k).idleTimeoutSeconds") ?? u.idleTimeoutSeconds
        u.tunnelIdleTimeoutSeconds = try r.double("\(k).tunnelIdleTimeoutSeconds") ?? u.tunnelIdleTimeoutSeconds
        u.maxRequestsPerConnection = try r.int("\(k).maxRequestsPerConnection") ?? u.maxRequestsPerConnection
        u.failureBackoffSeconds = try r.double("\(k).failureBackoffSeconds") ?? u.failureBackoffSeconds
        if let host = try r.string("\(k).host") { u.host = Upstream.HostPolicy(host) }
        u.forwardedFor = try r.bool("\(k).forwardedFor") ?? u.forwardedFor
        u.forwardedProto = try r.bool("\(k).forwardedProto") ?? u.forwardedProto
        u.forwarded = try r.bool("\(k).forwarded") ?? u.forwarded
        u.via = try r.bool("\(k).via") ?? u.via
        u.upstreamHandlesDictionaries = try r.bool("\(k).upstreamHandlesDictionaries") ?? u.upstreamHandlesDictionaries
        u.forwardTrace = try r.bool("\(k).forwardTrace") ?? u.forwardTrace
        u.maxBufferedBodyBytes = try r.int("\(k).maxBufferedBodyBytes") ?? u.maxBufferedBodyBytes
        u.maxDecodedBodyBytes = try r.int("\(k).maxDecodedBodyBytes") ?? u.maxDecodedBodyBytes
        u.tlsCAFile = try r.string("\(k).tlsCAFile") ?? u.tlsCAFile
        return u
    }

    /// The upstream `name` of quick mode (`serve --upstream URL`): the one server `url` (the flag
    /// beats `DCSERVE_UPSTREAMS_<NAME>_SERVERS`), every other setting from its
    /// `DCSERVE_UPSTREAMS_<NAME>_*` environment variable as for an upstream of a file. A variable of
    /// that prefix naming no upstream setting is refused, as a file's unknown key is.
    public static func quickUpstream(
        name: String, url: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> Upstream {
        let prefix = "DCSERVE_UPSTREAMS_\(name.uppercased())_"
        let known = Set(ConfigurationSchema.upstreamKeys.map { $0.uppercased() })
        for variable in environment.keys.sorted() where variable.hasPrefix(prefix) {
            let suffix = String(variable.dropFirst(prefix.count))
            guard known.contains(suffix.replacingOccurrences(of: "_", with: "")) else {
                throw ConfigurationError(key: variable, "names no setting of an upstream (known: \(ConfigurationSchema.upstreamKeys.sorted().joined(separator: ", ")), as DCSERVE_UPSTREAMS_\(name.uppercased())_READ_TIMEOUT_SECONDS and so on)")
            }
        }
        let document = try JSONSerialization.data(withJSONObject: ["upstreams": ["names": [name], name: ["servers": [url]]]])
        let env = KeyMappingProvider(upstream: EnvironmentVariablesProvider(environmentVariables: environment)) {
            $0.prepending(["dcserve"])
        }
        let reader = ConfigValues(ConfigReader(providers: [env, try JSONContentsProvider(contents: document)]))
        var upstream = try readUpstream(reader, name: name)
        upstream.servers = [url]
        return upstream
    }

    private static func uniqueNames(_ r: ConfigValues, _ key: String) throws -> [String] {
        let names = try r.stringArray(key) ?? []
        var seen = Set<String>()
        for name in names {
            guard !name.isEmpty, !name.contains(".") else {
                throw ConfigurationError(key: key, "\"\(name)\": names are non-empty and hold no '.' (they become key paths)")
            }
            guard seen.insert(name).inserted else { throw ConfigurationError(key: key, "\"\(name)\" is listed twice") }
        }
        return names
    }
}
