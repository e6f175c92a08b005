import DictionaryCodec
import DictionaryTransport
import Foundation
import Logging

/// Start-up precompression: for every static file that dictionaries may compress, encodes deltas
/// against the stored dictionaries whose `match` covers it (previous versions of the resource) at the
/// best level, in the background, so the first clients already get the smallest bytes.
///
/// Bounded: files up to `DictionaryCompressionMiddleware.maximumBodyBytes`, at most
/// `maxDictionariesPerResource` dictionaries each (most recently served first). Runs on the shared
/// `BackgroundEncoder` (one job per variant, de-duplicated with request-path jobs).
///
/// Stoppable: `isStopping` is checked before each file and each dictionary, and `start(in:)` enters
/// `group` until the walk is over, so shutdown can wait for it (hashing must not outlive the process's
/// OpenSSL cleanup).
struct Precompressor {
    static let maxDictionariesPerResource = 4

    let rules: DictionaryRuleSet
    let configuration: DCServeConfiguration
    let store: any DictionaryStore
    let library: DictionaryLibrary
    let variants: VariantCache
    let background: BackgroundEncoder<VariantKey>
    let observer: any CompressionObserver
    let logger: Logger
    var isStopping: @Sendable () -> Bool = { false }

    func start(in group: DispatchGroup) {
        let job = self
        DispatchQueue.global(qos: .utility).async(group: group) { job.run() }
    }

    func run() {
        let root = URL(fileURLWithPath: configuration.site.root).standardizedFileURL
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey, .fileSizeKey]) else { return }
        let stored = store.hashes.compactMap { hash in store.metadata(hash).map { (hash, $0) } }
            .sorted { $0.1.lastServed > $1.1.lastServed }
        let codings = configuration.compression.preference.filter(\.usesDictionary)
        guard !stored.isEmpty, !codings.isEmpty else { return }
        var queued = 0
        for case let url as URL in walker {
            if isStopping() { return }
            guard let values = try? url.resourceValues(forKeys: [.isRegularFileKey, .fileSizeKey]),
                  values.isRegularFile == true, let size = values.fileSize,
                  size >= configuration.compression.minimumBytes, size <= DictionaryCompressionMiddleware.maximumBodyBytes
            else { continue }
            let relative = url.standardizedFileURL.path.dropFirst(root.path.count)
            guard let path = relative.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed),
                  rules.dictionaryScope(for: path[...]) != nil,
                  let data = FileManager.default.contents(atPath: url.path) else { continue }
            let bytes = [UInt8](data)
            let resource = SHA256.hash(bytes)
            let candidates = stored.filter { $0.0 != resource && ($0.1.pattern?.matches(path: path) ?? false) }
                .prefix(Self.maxDictionariesPerResource)
            for (hash, _) in candidates {
                if isStopping() { return }
                guard let dictionary = library.lookup(hash)?.dictionary else { continue }
                for coding in codings {
                    let key = VariantKey(resource: resource, dictionary: hash, coding: coding)
                    let level = configuration.compression.bestLevels[coding] ?? coding.defaultLevel(.precompressed)
                    let variants = self.variants, logger = self.logger, observer = self.observer
                    if background.submit(key, {
                        do {
                            let start = ContinuousClock.now
                            let encoded = try coding.encode(bytes, dictionary: dictionary, level: level)
                            observer.encoded(coding: coding, level: level, duration: ContinuousClock.now - start)
                            _ = variants.insert(CachedVariant(bytes: encoded, level: level), for: key)
                        } catch {
                            logger.error("precompression failed", metadata: ["path": "\(path)", "error": "\(error)"])
                        }
                    }) { queued += 1 }
                }
            }
        }
        if queued > 0 { logger.info("precompressing deltas in the background", metadata: ["variants": "\(queued)"]) }
    }
}
