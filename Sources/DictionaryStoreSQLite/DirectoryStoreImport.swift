import DictionaryCodec
import DictionaryTransport
import Foundation
import Logging

/// Imports a ``DictionaryTransport/DirectoryDictionaryStore`` found in the SQLite store's directory
/// (the layout earlier dcserve versions, and `dcserve train --store`, write): opens it (which verifies
/// every file, quarantining mismatches), copies every record and its bytes into the database in one
/// transaction (records the database already holds are kept), then removes the imported files.
/// Idempotent: an import interrupted before the removal is repeated at the next open with the same
/// result.
enum DirectoryStoreImport {
    /// Whether `directory` holds files named like a directory store's records.
    static func hasRecords(_ directory: String) -> Bool {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return false }
        return names.contains { name in
            guard name.hasSuffix(".json"), let hex = name.split(separator: ".").first else { return false }
            return hex.utf8.count == 64 && DictionaryHash(hex: hex) != nil
        }
    }

    static func run(into store: SQLiteDictionaryStore, directory: String, logger: Logger) throws {
        guard hasRecords(directory) else { return }
        let old: DirectoryDictionaryStore
        do {
            old = try DirectoryDictionaryStore(directory: directory, cacheBudget: 0, maxDictionaryBytes: store.maxDictionaryBytes,
                                               logger: logger)
        } catch {
            throw DictionaryStoreError("cannot import the directory store in \(directory): \(error)")
        }
        var stored: [StoredDictionary] = []
        for record in old.records {
            guard let hash = DictionaryHash(hex: Substring(record.hash)),
                  let dictionary = old.get(hash, partition: record.partition) else { continue }
            stored.append(dictionary)
        }
        try store.importRecords(stored)
        var hashes = Set<DictionaryHash>()
        for dictionary in stored {
            unlink(directory + "/" + DirectoryDictionaryStore.recordName(dictionary.hash, partition: dictionary.metadata.partition))
            hashes.insert(dictionary.hash)
        }
        for hash in hashes { unlink(directory + "/" + hash.hex) }
        logger.notice("imported the directory dictionary store into the SQLite store; its files were removed",
                      metadata: ["directory": "\(directory)", "records": "\(stored.count)", "dictionaries": "\(hashes.count)"])
    }
}
