import Dispatch
import DictionaryCodec
import DictionaryStorePostgres
import DictionaryTransport
import Foundation
import HTTPCore
import HTTPServer
import HTTPTypes
import Logging

/// dcserve as an application: the dictionary store, the caches, and the handler chain
/// (compression middleware → out-of-band dictionaries → routes → static files or upstreams) built
/// from one `DCServeConfiguration`. Also runs the store's housekeeping (flushing `lastServed`,
/// retention) and the start-up precompression.
///
/// Lifetime: `init` loads the store and starts housekeeping; `startBackgroundWork()` starts
/// precompression (once the listeners are open); `stop()` ends all background work and flushes the
/// store — call it on every exit path, start-up failures included, so no background hashing outlives
/// the process's OpenSSL cleanup.
///
/// Thread-safety: immutable after `init`; its parts are thread-safe. The housekeeping timer is only
/// cancelled after `init` (DispatchSource's cancel is thread-safe), hence `@unchecked Sendable`.
public final class DCServeApplication: @unchecked Sendable {
    public let configuration: DCServeConfiguration
    /// A `DirectoryDictionaryStore`, or a `TieredDictionaryStore` (PostgreSQL + local cache) when
    /// `store.kind` is `postgres` (see `DictionaryStoreAssembly`).
    public let store: any DictionaryStore
    /// The PostgreSQL tier, when the store is shared (for readiness and shutdown).
    public let sharedStore: PostgresDictionaryStore?
    public let library: DictionaryLibrary
    /// The compression step (kept to drain its pending live-version writes on `stop()`).
    let compressionMiddleware: DictionaryCompressionMiddleware
    public let variants: VariantCache
    /// `server.memoryBytes` divided among the caches.
    public let budget: MemoryBudget
    /// Static bodies read for encoding (their bytes count against `budget[.staticBodies]`).
    let resources: ResourceCache
    public let background: BackgroundEncoder<VariantKey>
    public let handler: any HTTPHandler
    /// The static site; nil when routes send every request to upstreams (then `site.root` is not read).
    public let staticFiles: StaticFileHandler?
    /// The router, when `configuration.routes` is not empty.
    public let router: RouteHandler?
    /// History dictionaries, when a rule has `history`.
    public let history: HistoryDictionaries?
    public let metrics: DCServeMetrics
    /// Recent responses, dictionary hits and bytes per 10 s, for the admin listener's live view.
    public let activity = LiveActivity()
    /// Readiness of this application; whoever runs the listeners sets `listenersOpen`.
    public let readiness: Readiness
    let logger: Logger
    private let housekeeping: DispatchSourceTimer
    /// Removes the live versions the index dropped from the store, every second.
    private let droppedRemoval: DispatchSourceTimer
    /// Returns memory to the system once the process goes idle.
    private let idleRelease: IdleMemoryRelease
    private let housekeepingQueue = DispatchQueue(label: "dcserve.housekeeping")
    private let precompressor: Precompressor?
    /// Entered while precompression walks the site.
    private let backgroundWork = DispatchGroup()
    private let stopping = OnceFlag()

    /// How often `lastServed` updates are written and retention is applied by default
    /// (`store.housekeepingSeconds`).
    public static let housekeepingInterval: DispatchTimeInterval = .seconds(60)

    /// `upstreamHandler` builds the handler of each upstream a route names (default: 502 "no proxy").
    /// `startBackgroundWorkNow: false` defers precompression to `startBackgroundWork()`.
    public init(configuration: DCServeConfiguration, metrics: DCServeMetrics = DCServeMetrics(),
                logger: Logger = Logger(label: "dcserve"),
                upstreamHandler: UpstreamHandlerFactory = NoProxyHandler.factory,
                startBackgroundWorkNow: Bool = true) throws {
        AllocatorSettings.apply()
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
        let c = configuration
        let servesSite = c.routes.isEmpty || c.routes.contains { $0.upstream == nil }
        do {
            staticFiles = servesSite ? try StaticFileHandler(root: c.site.root) : nil
        } catch {
            throw ConfigurationError(key: "site.root", "\(error)")
        }
        if servesSite { try StoreLocation.check(store: c.store.path, documentRoot: c.site.root) }
        router = c.routes.isEmpty ? nil : try Self.makeRouter(c, site: staticFiles, upstreamHandler: upstreamHandler)
        let budget = c.memoryBudget
        self.budget = budget
        (store, sharedStore) = try DictionaryStoreAssembly.make(c.store, budget: budget)
        library = DictionaryLibrary(store: store, maxBytes: budget[.dictionaries], storeReadThreads: c.store.readThreads)
        if let tiered = store as? TieredDictionaryStore {
            tiered.onRemoval { [library] hash, partition in library.forget(hash, partition: partition) }
        }
        let storeHealth = StoreWriteHealth(unavailable: DictionaryStoreAssembly.degradation(of: sharedStore))
        readiness = Readiness(storePath: c.store.path, degradation: { storeHealth.degradation() })
        let health = HealthMiddleware(livenessPath: c.health.livenessPath, readinessPath: c.health.readinessPath,
                                      readiness: readiness)
        variants = VariantCache(budget: budget[.variants])
        background = BackgroundEncoder(maxConcurrent: 1)
        // Metrics and the live view are read only through the admin listener: without it, responses
        // are not counted at all (a counter update per response is a lock and hashed labels).
        let observed = c.admin.enabled
        let rules = try DictionaryRuleSet(rules: c.rules, outOfBand: c.outOfBand)
        let outOfBand = try OutOfBandDictionaryMiddleware(c.outOfBand, store: store)
        let liveIndex = try Self.liveIndex(rules: rules, store: store, maxBytes: c.store.maxBytes, maxEntries: budget.liveIndexEntries,
                                         maxTombstones: budget.liveIndexTombstones)
        if let tiered = store as? TieredDictionaryStore, !liveIndex.limits.isEmpty {
            // Versions other instances store become this one's too (same retention, same budget).
            tiered.onStored { [liveIndex] record in liveIndex.learn(record) }
        }
        var partitionSecret: [UInt8] = []
        if c.rules.contains(where: { $0.partition != nil }) {
            partitionSecret = try PartitionSecret.load(configured: c.partitionSecret, storeDirectory: c.store.path)
            if let sharedStore {
                try PartitionSecretFingerprint.check(partitionSecret, against: sharedStore)
            }
        }
        let history = HistoryDictionaries(rules: rules, store: store, library: library, partitionSecret: partitionSecret,
                                          logger: logger)
        self.history = history
        if let history, let tiered = store as? TieredDictionaryStore {
            // Dictionaries other instances build are offered and accepted here too.
            tiered.onStored { [history] record in history.learn(record) }
        }
        let resources = ResourceCache(budget: budget[.staticBodies])
        self.resources = resources
        let observer = CompressionObservers(observed ? [metrics, activity] : [])
        let compression = DictionaryCompressionMiddleware(
            rules: rules, settings: c.compression, store: store, library: library, variants: variants,
            resources: resources, background: background, observer: observer, logger: logger, memoBytes: budget[.responseMemo],
            live: liveIndex, partitionSecret: partitionSecret, decisionHeader: c.server.decisionHeader, history: history,
            sharedCaches: c.server.sharedCaches, storeHealth: storeHealth, accessLogNotes: c.server.accessLog)
        let inner: any HTTPHandler = router ?? staticFiles!  // no routes → servesSite
        var middlewares: [any HTTPMiddleware] = [health, compression, outOfBand]
        if let history { middlewares.append(HistoryDictionaryMiddleware(history: history)) }
        var served = inner.wrapped(in: middlewares)
        if let source = ExperimentKeySource(configuration: c), let groupField = HTTPField.Name(c.experiment.groupHeader) {
            // The control group: the same inner handler behind a compression step without rules.
            let plain = DictionaryCompressionMiddleware(
                rules: try DictionaryRuleSet(rules: [], outOfBand: []), settings: c.compression, store: store, library: library,
                variants: variants, resources: resources, background: background, observer: observer, logger: logger,
                memoBytes: budget[.responseMemo], decisionHeader: c.server.decisionHeader, sharedCaches: c.server.sharedCaches,
                accessLogNotes: c.server.accessLog)
            served = ExperimentRouter(
                assignment: ExperimentAssignment(source: source, controlShare: c.experiment.controlShare), groupField: groupField,
                control: inner.wrapped(in: [health, plain]), dictionary: served, metrics: observed ? ExperimentMetrics() : nil,
                activity: observed ? activity.experiment : nil,
                controlStrippedFields: c.rules.compactMap { rule in
                    if case .upstreamHeader(let name)? = rule.partition { return HTTPField.Name(name) }
                    return nil
                },
                groupDependent: c.server.sharedCaches == .ignoreVary ? Self.groupDependentPaths(rules, c.outOfBand) : nil)
        }
        handler = observed ? served.wrapped(in: [MetricsMiddleware(metrics: metrics)]) : served
        compressionMiddleware = compression

        let timer = DispatchSource.makeTimerSource(queue: housekeepingQueue)
        housekeeping = timer
        let store = self.store, library = self.library
        let interval = DispatchTimeInterval.seconds(c.store.housekeepingSeconds)
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler {
            Self.housekeep(store: store, library: library, logger: logger)
            history?.housekeep()
        }
        timer.resume()
        // Live versions the index dropped leave the store within a second, so the store's own byte
        // budget never has to evict (least recently served first) a version the index still keeps.
        let removals = DispatchSource.makeTimerSource(queue: housekeepingQueue)
        droppedRemoval = removals
        removals.schedule(deadline: .now() + 1, repeating: 1)
        removals.setEventHandler { [live = liveIndex] in Self.removeDropped(live, store: store, library: library) }
        removals.resume()
        idleRelease = IdleMemoryRelease(store: store, trimAbove: budget.total, logger: logger) { [library, resources, compression] in
            // What is cheap to make again: dictionaries are reloaded from the store when named, static
            // bodies re-read, memoised responses and header values recomputed; the live index moves into
            // fresh storage, packed instead of spread over the heap traffic grew. Encoded variants stay
            // (a best-level re-encode costs far more than it frees).
            library.releaseAll()
            resources.removeAll()
            compression.releaseIdleMemory()
            releaseIdleZstdContexts()
        }
        if c.compression.precompress && staticFiles != nil {
            var p = Precompressor(rules: rules, configuration: c, store: store, library: library, variants: variants,
                                  background: background, observer: metrics, logger: logger)
            p.isStopping = { [stopping] in stopping.isSet }
            precompressor = p
        } else {
            precompressor = nil
        }
        if startBackgroundWorkNow { startBackgroundWork() }
    }

    /// Routes → handlers: each upstream a route names gets one handler from `upstreamHandler`.
    private static func makeRouter(_ c: DCServeConfiguration, site: StaticFileHandler?,
                                   upstreamHandler: UpstreamHandlerFactory) throws -> RouteHandler {
        var upstreamHandlers: [String: any HTTPHandler] = [:]
        for upstream in c.upstreams where c.routes.contains(where: { $0.upstream == upstream.name }) {
            do {
                upstreamHandlers[upstream.name] = try upstreamHandler(upstream)
            } catch let error as ConfigurationError {
                throw error
            } catch {
                throw ConfigurationError(key: "upstreams.\(upstream.name)", "\(error)")
            }
        }
        return RouteHandler(c.routes.map { route in
            let handler: any HTTPHandler = route.upstream.flatMap { upstreamHandlers[$0] } ?? site!
            return (name: route.name, prefix: route.prefix, handler: handler)
        })
    }

    /// Whether a path's responses can differ between the experiment's groups: a rule advertises,
    /// compresses or builds history dictionaries for it, or an out-of-band dictionary's `Link` goes on it.
    static func groupDependentPaths(_ rules: DictionaryRuleSet, _ outOfBand: [OutOfBandDictionary]) -> @Sendable (Substring) -> Bool {
        let pages = outOfBand.compactMap { try? URLPattern($0.advertiseOn, base: nil) }
        return { path in
            rules.advertisingRule(for: path) != nil || rules.dictionaryScope(for: path) != nil || rules.historyRule(for: path) != nil
                || pages.contains { $0.matches(path: path) }
        }
    }

    /// Starts precompression (if configured). Call once the listeners are open: a start-up that
    /// fails before then has no hashing in flight.
    public func startBackgroundWork() {
        guard !stopping.isSet else { return }
        precompressor?.start(in: backgroundWork)
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
        metrics.storedDictionaries.record(store.dictionaryCount)
        metrics.storeDegraded.record(readiness.storeIsDegraded ? 1 : 0)
        metrics.memory(budget: budget, used: memoryUse())
    }

    /// Bytes each consumer of the memory budget holds now (what `/metrics` shows beside the budget);
    /// `unmanaged` is the process's resident memory less the others.
    func memoryUse() -> [MemoryBudget.Consumer: Int] {
        var used: [MemoryBudget.Consumer: Int] = [
            .dictionaries: library.usage.bytes,
            .variants: variants.stats.bytes,
            .responseMemo: compressionMiddleware.memo.bytes,
            .staticBodies: resources.heldBytes,
            .storeCache: store.cacheBytes ?? 0,
            .liveIndex: compressionMiddleware.live.count * MemoryBudget.liveIndexEntryBytes
                + compressionMiddleware.live.tombstoneCount * MemoryBudget.liveIndexTombstoneBytes,
        ]
        let managed = used.values.reduce(0, +)
        used[.unmanaged] = max(0, ProcessMemory.residentBytes() - managed)
        return used
    }

    /// Removes the versions `live` dropped from the store (and the library).
    static func removeDropped(_ live: LiveVersionIndex, store: any DictionaryStore, library: DictionaryLibrary) {
        let dropped = live.takeDropped()
        guard !dropped.isEmpty else { return }
        let records = dropped.map { (hash: $0.hash, partition: DictionaryCompressionMiddleware.storePartition($0.partition)) }
        store.remove(records)
        for record in records { library.forget(record.hash, partition: record.partition) }
    }

    /// Writes pending store updates and applies retention.
    static func housekeep(store: any DictionaryStore, library: DictionaryLibrary, logger: Logger) {
        do { try store.flush() } catch { logger.error("cannot flush dictionary store", metadata: ["error": "\(error)"]) }
        // The store logs each removal (once); the library only forgets it.
        for removal in store.prune(now: Date()) { library.forget(removal.hash, partition: removal.partition) }
    }

    /// Ends all background work and flushes the store, in order: precompression stops walking (and
    /// is waited for), the background encoder drops its queue, housekeeping is cancelled and one last
    /// flush and retention pass runs on its queue, then the encode still running (if any) is waited
    /// for — after the flush, so a long encode cannot cost the store's final save. Blocks until done;
    /// idempotent. Call before the process exits, whatever the reason.
    public func stop() {
        guard stopping.set() else { return }
        backgroundWork.wait()
        background.close()
        compressionMiddleware.drainLiveWrites()
        history?.waitForBuilds()
        housekeeping.cancel()
        droppedRemoval.cancel()
        idleRelease.cancel()
        let store = self.store, library = self.library, logger = self.logger
        housekeepingQueue.sync { Self.housekeep(store: store, library: library, logger: logger) }
        background.waitForRunningJobs()
        sharedStore?.shutdown()
    }
}

extension DCServeApplication {
    /// The live-version index of the rules with `upstreamVersions`/`partition`, rebuilt from the store.
    /// `maxBytes`: the global byte budget of live versions (the store's, `store.maxBytes`).
    /// `maxEntries`: the versions its share of the memory budget holds.
    static func liveIndex(rules: DictionaryRuleSet, store: any DictionaryStore, maxBytes: Int? = nil,
                          maxEntries: Int? = nil, maxTombstones: Int = 100_000) throws -> LiveVersionIndex {
        let index = LiveVersionIndex(limits: Dictionary(
            rules.rules.filter(\.isLive).map { ($0.name, $0.upstreamVersions) }, uniquingKeysWith: { a, _ in a }),
            maxBytes: maxBytes, maxEntries: maxEntries, maxTombstones: maxTombstones)
        if !index.limits.isEmpty { index.load(from: store) }
        return index
    }
}
