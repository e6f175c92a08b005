import GRDB

/// The tables of the SQLite dictionary store and their migrations.
///
/// `dcserve_schema` holds one row: the schema version. A store whose file says a newer version than
/// this dcserve knows refuses to open (naming both versions).
///
/// Version 1:
/// - `blobs`: the dictionary bytes, once per SHA-256 (`hash`, 32 bytes), whoever they were stored for.
///   A rowid table (large rows stay out of the key's B-tree), `hash` unique.
/// - `records`: one row per (partition, hash) — the fields of ``DictionaryTransport/DictionaryMetadata``
///   as columns; `partition` is `''` for a shared dictionary; times are seconds since 1970;
///   `match_dest` is NULL for "all destinations" or the destinations joined by U+001F. A blob is removed
///   with its last record (`records_hash` finds the others); `records_recency` serves the byte
///   budget's least-recently-served order.
/// - `quarantine`: rows whose bytes did not match their hash when loaded, kept for inspection, never
///   read as dictionaries.
enum SQLiteDictionarySchema {
    static let currentVersion = 1
    /// Separator of `match_dest` members (a control character, never in a destination token).
    static let destinationSeparator: Character = "\u{1F}"

    /// The statements that bring the schema from version `n - 1` to `n`, at index `n - 1`.
    static let migrations: [[String]] = [
        [
            """
            CREATE TABLE blobs (
                id    INTEGER PRIMARY KEY,
                hash  BLOB    NOT NULL UNIQUE CHECK (length(hash) = 32),
                bytes BLOB    NOT NULL,
                size  INTEGER NOT NULL CHECK (size >= 0)
            )
            """,
            """
            CREATE TABLE records (
                partition     TEXT    NOT NULL,
                hash          BLOB    NOT NULL CHECK (length(hash) = 32),
                match         TEXT    NOT NULL,
                path_pattern  TEXT    NOT NULL,
                match_dest    TEXT,
                dictionary_id TEXT,
                rule          TEXT,
                source_path   TEXT,
                first_served  REAL    NOT NULL,
                last_served   REAL    NOT NULL,
                max_age       INTEGER,
                expires       REAL,
                byte_size     INTEGER NOT NULL,
                PRIMARY KEY (partition, hash)
            ) WITHOUT ROWID
            """,
            "CREATE INDEX records_hash ON records (hash)",
            "CREATE INDEX records_recency ON records (last_served, hash, partition)",
            "CREATE INDEX records_rule ON records (rule, last_served)",
            """
            CREATE TABLE quarantine (
                id        INTEGER PRIMARY KEY,
                hash      BLOB    NOT NULL,
                bytes     BLOB,
                reason    TEXT    NOT NULL,
                at        REAL    NOT NULL
            )
            """,
        ],
    ]

    /// Creates or migrates the schema to ``currentVersion`` (in the caller's transaction).
    static func migrate(_ db: Database) throws -> (from: Int, to: Int) {
        try db.execute(sql: """
            CREATE TABLE IF NOT EXISTS dcserve_schema (
                singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
                version   INTEGER NOT NULL
            )
            """)
        let found = try Int.fetchOne(db, sql: "SELECT version FROM dcserve_schema") ?? 0
        guard found <= currentVersion else {
            throw SQLiteStoreOpenError(
                "the SQLite dictionary store's schema is version \(found), newer than this dcserve knows (\(currentVersion)): upgrade dcserve")
        }
        guard found < currentVersion else { return (found, found) }
        for version in (found + 1)...currentVersion {
            for statement in migrations[version - 1] { try db.execute(sql: statement) }
        }
        try db.execute(sql: "INSERT INTO dcserve_schema (singleton, version) VALUES (1, ?) ON CONFLICT (singleton) DO UPDATE SET version = excluded.version",
                       arguments: [currentVersion])
        return (found, currentVersion)
    }
}

/// Why the store cannot open (a newer schema); a `DictionaryStoreError` for callers.
struct SQLiteStoreOpenError: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}
