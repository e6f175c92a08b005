import Foundation

/// How to reach the PostgreSQL dictionary store: host, port, credentials, database, TLS, pool size.
///
/// A plain value. Built from a URL (`postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=…]`) or field
/// by field. `description` never contains the password (it is what logs and errors show).
public struct PostgresStoreSettings: Sendable, Equatable, CustomStringConvertible {
    /// TLS to the server: `disable` (plain TCP), `prefer` (TLS when the server offers it), `require`
    /// (TLS with certificate and host-name verification against the system trust store).
    public enum TLSMode: String, Sendable, Equatable, CaseIterable {
        case disable, prefer, require
    }

    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    public var database: String
    public var tls: TLSMode
    /// Upper bound on pooled connections (queries, writes); one more connection listens for notifications.
    public var poolSize: Int
    /// Connecting (and each blocking store call) gives up after this long.
    public var connectTimeoutSeconds: Double

    public init(host: String = "127.0.0.1", port: Int = 5432, username: String = "dcserve", password: String? = nil,
                database: String = "dcserve", tls: TLSMode = .prefer, poolSize: Int = 4, connectTimeoutSeconds: Double = 5) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.tls = tls
        self.poolSize = poolSize
        self.connectTimeoutSeconds = connectTimeoutSeconds
    }

    /// True when `text` looks like a PostgreSQL URL (`postgres://` or `postgresql://`) rather than a path.
    public static func isURL(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    /// Parses `postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=disable|prefer|require]` (user,
    /// password and database percent-decoded). Errors name what is wrong without repeating the password.
    public init(url text: String) throws(DictionaryStorePostgresError) {
        guard Self.isURL(text), let components = URLComponents(string: text) else {
            throw DictionaryStorePostgresError("not a PostgreSQL URL (expected postgres://USER[:PASSWORD]@HOST:PORT/DB)")
        }
        guard let host = components.host, !host.isEmpty else {
            throw DictionaryStorePostgresError("PostgreSQL URL has no host")
        }
        guard let user = components.user, !user.isEmpty else {
            throw DictionaryStorePostgresError("PostgreSQL URL has no user (postgres://USER@HOST/DB)")
        }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty, !database.contains("/") else {
            throw DictionaryStorePostgresError("PostgreSQL URL must name one database (postgres://USER@HOST:PORT/DB)")
        }
        let port = components.port ?? 5432
        guard (1...65535).contains(port) else { throw DictionaryStorePostgresError("PostgreSQL URL port \(port) is out of range") }
        var tls = TLSMode.prefer
        for item in components.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                switch item.value ?? "" {
                case "disable": tls = .disable
                case "allow", "prefer": tls = .prefer
                case "require", "verify-ca", "verify-full": tls = .require
                default: throw DictionaryStorePostgresError("PostgreSQL URL sslmode \"\(item.value ?? "")\" is unknown (disable, prefer, require)")
                }
            default:
                throw DictionaryStorePostgresError("PostgreSQL URL parameter \"\(item.name)\" is not supported (only sslmode)")
            }
        }
        self.init(host: host, port: port, username: components.percentEncodedUser.flatMap { $0.removingPercentEncoding } ?? user,
                  password: components.percentEncodedPassword.flatMap { $0.removingPercentEncoding },
                  database: database.removingPercentEncoding ?? database, tls: tls)
    }

    /// `postgres://USER@HOST:PORT/DB` with the password replaced by `***` when there is one.
    public var description: String {
        "postgres://\(username)\(password == nil ? "" : ":***")@\(host):\(port)/\(database) (tls \(tls.rawValue), pool \(poolSize))"
    }
}

/// Errors of the PostgreSQL dictionary store: a message fit for logs (never a password).
public struct DictionaryStorePostgresError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
