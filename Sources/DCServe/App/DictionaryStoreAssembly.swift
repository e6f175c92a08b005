import DictionaryStorePostgres
import DictionaryStoreSQLite
import DictionaryTransport
import Foundation
import Logging

/// Builds the dictionary store `store.kind` asks for: a `SQLiteDictionaryStore` in `store.path` (the
/// default), a `DirectoryDictionaryStore` in `store.path`, or (`postgres`) a `TieredDictionaryStore` of a `PostgresDictionaryStore` (the shared truth, with
/// the retention limits) and a `DirectoryDictionaryStore` in `store.path` bounded by
/// `store.cacheMaxBytes` (the local cache). Errors are `ConfigurationError`s naming the key, never
/// the password.
enum DictionaryStoreAssembly {
    /// `budget`: the store's share of memory (SQLite's page caches).
    static func make(_ c: DCServeConfiguration.Store, budget: MemoryBudget = MemoryBudget()) throws -> (store: any DictionaryStore, shared: PostgresDictionaryStore?) {
        let retention = DictionaryRetention(maxTotalBytes: c.maxBytes, maxCountPerRule: c.maxEntriesPerRule,
                                            keepPastExpiry: TimeInterval(c.retainAfterExpirySeconds))
        switch c.kind {
        case .sqlite:
            do {
                let readers = SQLiteDictionaryStore.defaultReaders
                return (try SQLiteDictionaryStore(directory: c.path, retention: retention,
                                                  pageCacheBytes: budget.storePageCacheBytes(readers: readers), readers: readers,
                                                  logger: Logger(label: "dcserve.dictionary-store")), nil)
            } catch {
                throw ConfigurationError(key: "store.path", "\(error)")
            }
        case .directory:
            do {
                return (try DirectoryDictionaryStore(directory: c.path, retention: retention,
                                                     companionFiles: [PartitionSecret.fileName],
                                                     logger: Logger(label: "dcserve.dictionary-store")), nil)
            } catch {
                throw ConfigurationError(key: "store.path", "\(error)")
            }
        case .postgres:
            let local: DirectoryDictionaryStore
            do {
                local = try DirectoryDictionaryStore(directory: c.path, retention: DictionaryRetention(maxTotalBytes: c.cacheMaxBytes),
                                                     companionFiles: [PartitionSecret.fileName],
                                                     logger: Logger(label: "dcserve.dictionary-cache"))
            } catch {
                throw ConfigurationError(key: "store.path", "\(error)")
            }
            let shared: PostgresDictionaryStore
            do {
                shared = try PostgresDictionaryStore(settings: try c.postgres.settings(), retention: retention)
            } catch let error as DictionaryStorePostgresError {
                throw ConfigurationError(key: "store.postgres", error.message)
            }
            return (TieredDictionaryStore(local: local, shared: shared), shared)
        }
    }

    /// The readiness check's degradation: the shared store being unreachable.
    static func degradation(of shared: PostgresDictionaryStore?) -> (@Sendable () -> String?)? {
        guard let shared else { return nil }
        return {
            let status = shared.status
            guard !status.connected else { return nil }
            let seconds = Int(Date().timeIntervalSince(status.since))
            return "PostgreSQL dictionary store unreachable for \(seconds) s (\(status.lastError ?? "disconnected")); serving from the local cache"
        }
    }
}
