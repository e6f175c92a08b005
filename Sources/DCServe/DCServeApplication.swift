import Dispatch
import DictionaryCodec
import DictionaryStorePostgres
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
    /// A `DirectoryDictionaryStore`, or a `TieredDictionaryStore` (PostgreSQL + local cache) when
    /// `store.kind` is `postgres` (see `DictionaryStoreAssembly`).
    public let store: any DictionaryStore
    /// The PostgreSQL tier, when the store is shared (for readiness and shutdown).
    public let sharedStore: PostgresDictionaryStore?
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

    /// How often `lastServed` updates are written and retention is applied by default
    /// (`store.housekeepingSeconds`).
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
        (store, sharedStore) = try DictionaryStoreAssembly.make(c.store)
        library = DictionaryLibrary(store: store)
        if let tiered = store as? TieredDictionaryStore {
            tiered.onRemoval { [library] hash in library.forget(hash) }
        }
        readiness = Readiness(storePath: c.store.path, degradation: DictionaryStoreAssembly.degradation(of: sharedStore))
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
        let interval = DispatchTimeInterval.seconds(c.store.housekeepingSeconds)
        timer.schedule(deadline: .now() + interval, repeating: interval)
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
    static func housekeep(store: any DictionaryStore, library: DictionaryLibrary, logger: Logger) {
        do { try store.flush() } catch { logger.error("cannot flush dictionary store", metadata: ["error": "\(error)"]) }
        for removal in store.prune(now: Date()) {
            library.forget(removal.hash)
            logger.info("dictionary removed by retention", metadata: ["hash": "\(removal.hash.hex)", "reason": "\(removal.reason.rawValue)"])
        }
    }

    /// Stops housekeeping and flushes the store (call at shutdown).
    public func stop() {
        housekeeping.cancel()
        Self.housekeep(store: store, library: library, logger: logger)
        sharedStore?.shutdown()
    }
}
