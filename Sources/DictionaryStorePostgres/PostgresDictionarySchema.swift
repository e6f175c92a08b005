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
///
/// Version 3 (history windows shared by instances): `dcserve_history_groups`, one row per (rule,
/// group, partition) — new bytes since the last build, the last build's date, the build lease — and
/// `dcserve_history_entries`, the window's distinct bodies (by SHA-256) in order of `seq`, removed
/// with their group. `partition` is '' for a rule without partitions, else a partition id as above.
/// Tables only added: instances of version 2 keep working on the same rows (with windows of their own).
enum PostgresDictionarySchema {
    static let currentVersion = 3
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
        [
            """
            CREATE TABLE dcserve_history_groups (
                rule        text        NOT NULL,
                grp         text        NOT NULL,
                partition   text        NOT NULL
                    CHECK (partition = '' OR partition ~ '^[0-9a-f]{64}$' OR partition = 'anonymous'),
                new_bytes   bigint      NOT NULL DEFAULT 0 CHECK (new_bytes >= 0),
                total_bytes bigint      NOT NULL DEFAULT 0 CHECK (total_bytes >= 0),
                last_build  timestamptz,
                lease_token text,
                lease_until timestamptz,
                updated     timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (rule, grp, partition)
            )
            """,
            "CREATE INDEX dcserve_history_groups_recency ON dcserve_history_groups (rule, updated)",
            "CREATE SEQUENCE dcserve_history_seq",
            """
            CREATE TABLE dcserve_history_entries (
                rule      text   NOT NULL,
                grp       text   NOT NULL,
                partition text   NOT NULL,
                body_hash text   NOT NULL CHECK (body_hash ~ '^[0-9a-f]{64}$'),
                body      bytea  NOT NULL,
                byte_size bigint NOT NULL CHECK (byte_size >= 0),
                seq       bigint NOT NULL,
                PRIMARY KEY (rule, grp, partition, body_hash),
                FOREIGN KEY (rule, grp, partition) REFERENCES dcserve_history_groups ON DELETE CASCADE
            )
            """,
            "CREATE INDEX dcserve_history_entries_order ON dcserve_history_entries (rule, grp, partition, seq)",
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
