import Foundation

extension DCServeConfiguration {
    /// `upstreams.*` and `routes.*`: server URLs parse (http/https, host, port), durations and sizes
    /// in range, names unique, route prefixes start with `/`, are unique, and name an existing upstream.
    func validateUpstreamsAndRoutes() throws {
        func check(_ ok: Bool, _ key: String, _ reason: String) throws {
            if !ok { throw ConfigurationError(key: key, reason) }
        }
        var upstreamNames = Set<String>()
        for u in upstreams {
            let k = "upstreams.\(u.name)"
            try check(!u.name.isEmpty && !u.name.contains("."), k, "a name is non-empty and holds no '.'")
            try check(upstreamNames.insert(u.name).inserted, k, "upstream name used twice")
            try check(!u.servers.isEmpty, "\(k).servers", "must list at least one server URL, e.g. http://127.0.0.1:8000")
            for server in u.servers {
                do {
                    _ = try UpstreamServerURL(parsing: server)
                } catch {
                    throw ConfigurationError(key: "\(k).servers", "\(error)")
                }
            }
            for (field, seconds) in [("connectTimeoutSeconds", u.connectTimeoutSeconds), ("sendTimeoutSeconds", u.sendTimeoutSeconds),
                                     ("readTimeoutSeconds", u.readTimeoutSeconds), ("idleTimeoutSeconds", u.idleTimeoutSeconds),
                                     ("tunnelIdleTimeoutSeconds", u.tunnelIdleTimeoutSeconds)] {
                try SettingRange.checkSeconds(seconds, key: "\(k).\(field)")
            }
            try SettingRange.checkSeconds(u.failureBackoffSeconds, key: "\(k).failureBackoffSeconds", zeroAllowed: true)
            try SettingRange.check(u.maxIdleConnections, in: 0...100_000, key: "\(k).maxIdleConnections", "connections")
            try SettingRange.check(u.maxRequestsPerConnection, in: 1...1_000_000_000, key: "\(k).maxRequestsPerConnection", "requests")
            try SettingRange.check(u.maxBufferedBodyBytes, in: 0...SettingRange.maxBytes, key: "\(k).maxBufferedBodyBytes", "bytes")
            try SettingRange.check(u.maxDecodedBodyBytes, in: 1...SettingRange.maxBytes, key: "\(k).maxDecodedBodyBytes", "bytes")
            if case .fixed(let host) = u.host {
                try check(!host.isEmpty && host.utf8.allSatisfy { (0x21...0x7e).contains($0) }, "\(k).host",
                          "\"keep\", \"upstream\", or a Host value (visible ASCII, no spaces)")
            }
            if let ca = u.tlsCAFile {
                try check(FileManager.default.isReadableFile(atPath: ca), "\(k).tlsCAFile", "\(ca) is not a readable file")
            }
        }
        var routeNames = Set<String>(), prefixes = [String: String]()
        for route in routes {
            let k = "routes.\(route.name)"
            try check(!route.name.isEmpty && !route.name.contains("."), k, "a name is non-empty and holds no '.'")
            try check(routeNames.insert(route.name).inserted, k, "route name used twice")
            try check(route.prefix.hasPrefix("/"), "\(k).prefix", "must be a path prefix starting with /, not \"\(route.prefix)\"")
            try check(route.prefix.utf8.allSatisfy { (0x21...0x7e).contains($0) } && !route.prefix.contains("?") && !route.prefix.contains("#"),
                      "\(k).prefix", "must be a path (visible ASCII, no spaces, '?' or '#')")
            if let other = prefixes.updateValue(route.name, forKey: route.prefix) {
                throw ConfigurationError(key: "\(k).prefix", "\"\(route.prefix)\" is also the prefix of routes.\(other)")
            }
            if let upstream = route.upstream {
                try check(upstreamNames.contains(upstream), "\(k).upstream",
                          "no upstream named \"\(upstream)\" (known: \(upstreams.map(\.name).joined(separator: ", ")))")
            }
        }
    }
}
