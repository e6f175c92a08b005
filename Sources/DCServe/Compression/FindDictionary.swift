import DictionaryCodec
import DictionaryTransport
import HTTPServer

/// Finding the dictionary a request names, by (partition, hash).
extension DictionaryCompressionMiddleware {
    /// Whether the request's `Available-Dictionary` names a dictionary that answering it would read
    /// from the store (held there, not loaded): its own partition's, or a shared one.
    func namesDictionaryToLoad(_ request: HTTPServerRequest, partition: String?) -> Bool {
        let offered = request.head.headerFields[values: .availableDictionary]
        guard offered.count == 1,
              let hash = availableDictionaries.value(for: offered[0], compute: { AvailableDictionary.parse(fieldValue: $0) }).value?.hash
        else { return false }
        if let own = Self.storePartition(partition ?? ""), library.needsStoreRead(hash, partition: own) { return true }
        return library.needsStoreRead(hash, partition: nil)
    }

    /// The store partition of a request's live partition ("" = shared → nil).
    static func storePartition(_ partition: String) -> String? { partition.isEmpty ? nil : partition }

    /// The dictionary `hash` as a request of store partition `partition` may use it: that partition's
    /// own (found by (partition, hash)), else a shared one (shared bytes are nobody's secret); with the
    /// partition owning it (nil = shared). Never another partition's.
    func dictionary(_ hash: DictionaryHash, partition: String?)
        -> (dictionary: CompressionDictionary, candidate: DictionaryCandidate, owner: String?)? {
        if let partition, let own = library.lookup(hash, partition: partition) { return (own.dictionary, own.candidate, partition) }
        return library.lookup(hash, partition: nil).map { ($0.dictionary, $0.candidate, nil) }
    }
}
