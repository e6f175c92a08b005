import DictionaryStorePostgres

/// The shared PostgreSQL dictionary store's settings (`store.kind`, `store.postgres.*`).
///
/// `store.postgres.url` (`postgres://USER[:PASSWORD]@HOST:PORT/DB[?sslmode=…]`) or the fields; a
/// field given next to the URL overrides the URL's part (e.g. the password from
/// `DCSERVE_STORE_POSTGRES_PASSWORD`, kept out of the file). The password is never logged.
extension DCServeConfiguration.Store {
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        /// One SQLite database in `store.path` (the default: one instance, many small versions).
        case sqlite
        /// One file per dictionary plus its record in `store.path` (the earlier default).
        case directory
        /// PostgreSQL shared by several instances, `store.path` being each one's local cache.
        case postgres
    }

    public struct Postgres: Sendable, Equatable {
        public var url: String?
        public var host: String?
        public var port: Int?
        public var user: String?
        public var password: String?
        public var database: String?
        /// `disable`, `prefer` or `require`.
        public var tls: String?
        public var poolSize = 4
        public var connectTimeoutSeconds = 5
        public init() {}

        /// The connection settings, the fields overriding the URL's parts.
        public func settings() throws -> PostgresStoreSettings {
            var s = PostgresStoreSettings()
            if let url {
                do { s = try PostgresStoreSettings(url: url) } catch {
                    throw ConfigurationError(key: "store.postgres.url", error.message)
                }
            }
            if let host { s.host = host }
            if let port { s.port = port }
            if let user { s.username = user }
            if let password { s.password = password }
            if let database { s.database = database }
            if let tls {
                guard let mode = PostgresStoreSettings.TLSMode(rawValue: tls) else {
                    throw ConfigurationError(key: "store.postgres.tls", "must be disable, prefer or require")
                }
                s.tls = mode
            }
            s.poolSize = poolSize
            s.connectTimeoutSeconds = Double(connectTimeoutSeconds)
            return s
        }
    }
}

extension ConfigurationLoader {
    static func readPostgresStore(_ r: ConfigValues, into c: inout DCServeConfiguration) throws {
        if let kind = try r.string("store.kind") {
            guard let k = DCServeConfiguration.Store.Kind(rawValue: kind) else {
                throw ConfigurationError(key: "store.kind", "must be sqlite, directory or postgres")
            }
            c.store.kind = k
        }
        c.store.cacheMaxBytes = try r.int("store.cacheMaxBytes") ?? c.store.cacheMaxBytes
        c.store.housekeepingSeconds = try r.int("store.housekeepingSeconds") ?? c.store.housekeepingSeconds
        c.store.readThreads = try r.int("store.readThreads") ?? c.store.readThreads
        var p = c.store.postgres
        p.url = try r.string("store.postgres.url") ?? p.url
        p.host = try r.string("store.postgres.host") ?? p.host
        p.port = try r.int("store.postgres.port") ?? p.port
        p.user = try r.string("store.postgres.user") ?? p.user
        p.password = try r.string("store.postgres.password") ?? p.password
        p.database = try r.string("store.postgres.database") ?? p.database
        p.tls = try r.string("store.postgres.tls") ?? p.tls
        p.poolSize = try r.int("store.postgres.poolSize") ?? p.poolSize
        p.connectTimeoutSeconds = try r.int("store.postgres.connectTimeoutSeconds") ?? p.connectTimeoutSeconds
        c.store.postgres = p
    }
}

extension DCServeConfiguration {
    func validatePostgresStore() throws {
        func check(_ ok: Bool, _ key: String, _ reason: String) throws {
            if !ok { throw ConfigurationError(key: key, reason) }
        }
        try check(store.cacheMaxBytes > 0, "store.cacheMaxBytes", "must be positive")
        try check((1...86_400).contains(store.housekeepingSeconds), "store.housekeepingSeconds", "must be 1…86400")
        try check((1...256).contains(store.readThreads), "store.readThreads", "must be 1…256")
        guard store.kind == .postgres else { return }
        let p = store.postgres
        try check(p.url != nil || p.host != nil, "store.postgres.url", "store.kind is postgres: set store.postgres.url (or host, user, database)")
        try check((1...64).contains(p.poolSize), "store.postgres.poolSize", "must be 1…64")
        try check((1...300).contains(p.connectTimeoutSeconds), "store.postgres.connectTimeoutSeconds", "must be 1…300")
        if let port = p.port { try check((1...65_535).contains(port), "store.postgres.port", "must be 1…65535") }
        let settings = try p.settings()
        try check(!settings.host.isEmpty, "store.postgres.host", "must not be empty")
        try check(!settings.username.isEmpty, "store.postgres.user", "must not be empty")
        try check(!settings.database.isEmpty, "store.postgres.database", "must not be empty")
    }
}

extension DCServeConfiguration.Store {
    /// What logs show for the store: the directory, or the PostgreSQL server (password as `***`) and
    /// the local cache directory.
    public var logDescription: String {
        guard kind == .postgres else { return path }
        let server = (try? postgres.settings())?.description ?? "postgres"
        return "\(server), cache \(path)"
    }
}
