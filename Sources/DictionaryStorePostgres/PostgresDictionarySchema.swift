import Logging
import PostgresNIO

/// The tables of the PostgreSQL dictionary store and their migrations.
///
/// `dcserve_schema` holds one row: the schema version. Every dcserve instance migrates at start,
/// inside a transaction holding an advisory lock, so instances starting together migrate once and
/// an instance finding a newer schema than it knows refuses to start (naming both versions).
///
/// Version 1: `dcserve_dictionaries`, one row per (partition, hash): the bytes and the record of
/// ``DictionaryTransport/DictionaryMetadata``. `partition` is NULL for dictionaries shared by every
/// user.
///
/// Version 2 (per-user partitions, #14/#15): `partition` may only hold a partition id — 64 lowercase
/// hex digits (an HMAC, never a credential) or `anonymous` — and an index on `last_served` serves the
/// byte budget's least-recently-served order. Rows are looked up by (partition, hash) only.
enum PostgresDictionarySchema {
    static let currentVersion = 2
    /// The LISTEN/NOTIFY channel: payloads `stored <hex>` and `removed <hex>` for shared dictionaries,
    /// `stored <hex> <partition>` and `removed <hex> <partition>` for partitioned ones.
    static let channel = "dcserve_dictionaries"
    /// Advisory lock keys ("dcserve" + a number): migrations, retention.
    static let migrationLock: Int64 = 0x6463_7365_7276_0001
    static let retentionLock: Int64 = 0x6463_7365_7276_0002

    /// The statements that bring the schema from version `n - 1` to `n`, at index `n - 1`.
    static let migrations: [[String]] = [
        [
            """
            CREATE TABLE dcserve_dictionaries (
                partition     text,
                hash          text        NOT NULL CHECK (hash ~ '^[0-9a-f]{64}$'),
                bytes         bytea       NOT NULL,
                byte_size     bigint      NOT NULL CHECK (byte_size >= 0),
                match         text        NOT NULL,
                path_pattern  text        NOT NULL,
                match_dest    text[]      NOT NULL DEFAULT '{}',
                dictionary_id text,
                rule          text,
                source_path   text,
                first_served  timestamptz NOT NULL,
                last_served   timestamptz NOT NULL,
                max_age       bigint,
                expires       timestamptz,
                CONSTRAINT dcserve_dictionaries_key UNIQUE NULLS NOT DISTINCT (partition, hash)
            )
            """,
            "CREATE INDEX dcserve_dictionaries_rule ON dcserve_dictionaries (partition, rule, last_served)",
        ],
        [
            """
            ALTER TABLE dcserve_dictionaries ADD CONSTRAINT dcserve_dictionaries_partition_id
                CHECK (partition IS NULL OR partition ~ '^[0-9a-f]{64}$' OR partition = 'anonymous')
            """,
            "CREATE INDEX dcserve_dictionaries_recency ON dcserve_dictionaries (last_served)",
        ],
    ]

    /// Creates or migrates the schema to ``currentVersion``.
    static func migrate(on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(migrationLock))", logger: logger)
            try await connection.query(PostgresQuery(unsafeSQL: """
                CREATE TABLE IF NOT EXISTS dcserve_schema (
                    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                    version   integer NOT NULL
                )
                """), logger: logger)
            var found = 0
            for try await version in try await connection.query("SELECT version FROM dcserve_schema", logger: logger)
                .decode(Int.self) { found = version }
            guard found <= currentVersion else {
                throw DictionaryStorePostgresError(
                    "PostgreSQL dictionary schema is version \(found), newer than this dcserve knows (\(currentVersion)): upgrade dcserve")
            }
            guard found < currentVersion else { return }
            for version in (found + 1)...currentVersion {
                for statement in migrations[version - 1] {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
            }
            try await connection.query("""
                INSERT INTO dcserve_schema (singleton, version) VALUES (true, \(currentVersion))
                ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version
                """, logger: logger)
            logger.notice("PostgreSQL dictionary schema migrated", metadata: ["from": "\(found)", "to": "\(currentVersion)"])
        }
    }
}
