import Dispatch
import DictionaryCodec
import DictionaryTransport
import Foundation
import HTTPServer
import Logging

/// dcserve as an application: the dictionary store, the caches, and the handler chain
/// (compression middleware → out-of-band dictionaries → static files) built from one
/// `DCServeConfiguration`. Also runs the store's housekeeping (flushing `lastServed`, retention).
///
/// Thread-safety: immutable after `init`; its parts are thread-safe. The housekeeping timer is only
/// cancelled after `init` (DispatchSource's cancel is thread-safe), hence `@unchecked Sendable`.
/// `stop()` flushes the store.
public final class DCServeApplication: @unchecked Sendable {
    public let configuration: DCServeConfiguration
    public let store: DirectoryDictionaryStore
    public let library: DictionaryLibrary
    public let variants: VariantCache
    public let background: BackgroundEncoder<VariantKey>
    public let handler: any HTTPHandler
    public let staticFiles: StaticFileHandler
    public let metrics: DCServeMetrics
    /// Readiness of this application; whoever runs the listeners sets `listenersOpen`.
    public let readiness: Readiness
    let logger: Logger
    private let housekeeping: DispatchSourceTimer

    /// How often `lastServed` updates are written and retention is applied.
    public static let housekeepingInterval: DispatchTimeInterval = .seconds(60)

    public init(configuration: DCServeConfiguration, metrics: DCServeMetrics = DCServeMetrics(),
                logger: Logger = Logger(label: "dcserve")) throws {
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
        let c = configuration
        do {
            staticFiles = try StaticFileHandler(root: c.site.root)
        } catch {
            throw ConfigurationError(key: "site.root", "\(error)")
        }
        try StoreLocation.check(store: c.store.path, documentRoot: c.site.root)
        do {
            store = try DirectoryDictionaryStore(
                directory: c.store.path,
                retention: DictionaryRetention(maxTotalBytes: c.store.maxBytes, maxCountPerRule: c.store.maxEntriesPerRule,
                                               keepPastExpiry: TimeInterval(c.store.retainAfterExpirySeconds)),
                logger: Logger(label: "dcserve.dictionary-store"))
        } catch {
            throw ConfigurationError(key: "store.path", "\(error)")
        }
        library = DictionaryLibrary(store: store)
        readiness = Readiness(storePath: c.store.path)
        let health = HealthMiddleware(livenessPath: c.health.livenessPath, readinessPath: c.health.readinessPath,
                                      readiness: readiness)
        variants = VariantCache(budget: c.compression.variantCacheBytes)
        background = BackgroundEncoder(maxConcurrent: 1)
        let rules = try DictionaryRuleSet(rules: c.rules, outOfBand: c.outOfBand)
        let outOfBand = try OutOfBandDictionaryMiddleware(c.outOfBand, store: store)
        let compression = DictionaryCompressionMiddleware(
            rules: rules, settings: c.compression, store: store, library: library, variants: variants,
            resources: ResourceCache(budget: max(c.compression.variantCacheBytes / 2, 1 << 20)),
            background: background, observer: metrics, logger: logger)
        handler = staticFiles.wrapped(in: [MetricsMiddleware(metrics: metrics), health, compression, outOfBand])

        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "dcserve.housekeeping"))
        housekeeping = timer
        let store = self.store, library = self.library
        timer.schedule(deadline: .now() + Self.housekeepingInterval, repeating: Self.housekeepingInterval)
        timer.setEventHandler {
            Self.housekeep(store: store, library: library, logger: logger)
        }
        timer.resume()
        if c.compression.precompress {
            Precompressor(rules: rules, configuration: c, store: store, library: library, variants: variants,
                          background: background, observer: metrics, logger: logger).start()
        }
    }

    /// The health middleware for another listener (the admin one) sharing this application's checks.
    public var healthMiddleware: HealthMiddleware {
        HealthMiddleware(livenessPath: configuration.health.livenessPath, readinessPath: configuration.health.readinessPath,
                         readiness: readiness)
    }

    /// Paths the access log should skip (health probes, unless `health.accessLog`).
    public var accessLogExclusions: Set<String> {
        configuration.health.accessLog ? [] : [configuration.health.livenessPath, configuration.health.readinessPath]
    }

    /// Refreshes the gauges that are read rather than counted.
    public func refreshGauges(openConnections: Int) {
        metrics.openConnections.record(openConnections)
        metrics.storedDictionaries.record(store.hashes.count)
    }

    /// Writes pending store updates and applies retention.
    static func housekeep(store: DirectoryDictionaryStore, library: DictionaryLibrary, logger: Logger) {
        do { try store.flush() } catch { logger.error("cannot flush dictionary store", metadata: ["error": "\(error)"]) }
        // The store logs each removal (once); the library only forgets it.
        for removal in store.prune(now: Date()) { library.forget(removal.hash) }
    }

    /// Stops housekeeping and flushes the store (call at shutdown).
    public func stop() {
        housekeeping.cancel()
        Self.housekeep(store: store, library: library, logger: logger)
    }
}
