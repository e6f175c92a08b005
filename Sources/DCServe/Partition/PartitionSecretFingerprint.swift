import DictionaryStorePostgres

/// Instances sharing a PostgreSQL store must key partitions with the same secret: at start each
/// compares the fingerprint of its secret, HMAC-SHA256(secret, "dcserve partition secret
/// fingerprint") in hex, with the one the store keeps (the first instance's), and refuses to start
/// on a mismatch, naming `dictionaries.partitionSecret`. The fingerprint reveals nothing of the secret
/// beyond equality. Pure apart from the store call; thread-safe.
enum PartitionSecretFingerprint {
    static let message = Array("dcserve partition secret fingerprint".utf8)

    static func of(_ secret: [UInt8]) -> String { PartitionID.hmacSHA256(key: secret, message: message).hex }

    /// Throws `ConfigurationError` (`dictionaries.partitionSecret`) when `store` holds another
    /// secret's fingerprint; stores this one when it holds none.
    static func check(_ secret: [UInt8], against store: PostgresDictionaryStore) throws {
        let mine = of(secret)
        let stored: String?
        do {
            stored = try store.claimPartitionSecretFingerprint(mine)
        } catch let error as DictionaryStorePostgresError {
            throw ConfigurationError(key: "store.postgres", error.message)
        }
        guard let stored else { return }
        throw ConfigurationError(key: "dictionaries.partitionSecret", """
            this instance's partition secret (fingerprint \(mine.prefix(12))…) differs from the one \
            the instances sharing this PostgreSQL store use (fingerprint \(stored.prefix(12))…): their users' \
            partitions would not match. Give every instance the same dictionaries.partitionSecret \
            (DCSERVE_DICTIONARIES_PARTITION_SECRET)
            """)
    }
}
