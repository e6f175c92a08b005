import Logging
import PostgresNIO

/// The partition secret every instance sharing one PostgreSQL store must have, checked by a
/// fingerprint kept in the store (`dcserve_partition_secret`, one row): partition ids are HMACs
/// under that secret, so an instance with another secret would compute other ids for the same users
/// and neither find their dictionaries nor respect the others' retention by partition.
///
/// The fingerprint is an HMAC of a fixed text under the secret (the caller makes it), never the
/// secret: the table tells whether two secrets are the same, nothing more. The first instance to
/// check stores its fingerprint; later ones compare. Runs in a transaction under an advisory lock,
/// so instances starting together agree on one.
extension PostgresDictionaryStore {
    /// The advisory lock key ("dcserve" + 3) of the fingerprint's transaction.
    static let partitionSecretLock: Int64 = 0x6463_7365_7276_0003

    /// Stores `fingerprint` (64 lowercase hex digits) when the store has none; returns the store's
    /// fingerprint when it differs from `fingerprint`, nil when they agree (or it was just stored).
    /// Blocks (start-up only); throws ``DictionaryStorePostgresError`` when PostgreSQL cannot answer.
    public func claimPartitionSecretFingerprint(_ fingerprint: String) throws -> String? {
        let client = self.client, logger = Logger(label: "dcserve.dictionary-store.postgres")
        let stored: String
        do {
            stored = try blockingAwait(timeout: settings.connectTimeoutSeconds + 5, what: "partition secret check") {
                try await client.withConnection { connection in
                    try await connection.withTransaction(logger: logger) { connection in
                        try await connection.query("SELECT pg_advisory_xact_lock(\(Self.partitionSecretLock))", logger: logger)
                        try await connection.query(PostgresQuery(unsafeSQL: """
                            CREATE TABLE IF NOT EXISTS dcserve_partition_secret (
                                singleton   boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
                                fingerprint text        NOT NULL CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
                                created     timestamptz NOT NULL DEFAULT now()
                            )
                            """), logger: logger)
                        try await connection.query("""
                            INSERT INTO dcserve_partition_secret (fingerprint) VALUES (\(fingerprint))
                            ON CONFLICT (singleton) DO NOTHING
                            """, logger: logger)
                        var found = ""
                        for try await value in try await connection.query(
                            "SELECT fingerprint FROM dcserve_partition_secret", logger: logger).decode(String.self) { found = value }
                        return found
                    }
                }
            }
        } catch let error as DictionaryStorePostgresError {
            throw error
        } catch {
            throw DictionaryStorePostgresError("cannot check the partition secret against PostgreSQL: \(Self.describe(error))")
        }
        return stored == fingerprint ? nil : stored
    }
}
