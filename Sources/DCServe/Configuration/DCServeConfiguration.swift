import DictionaryCodec

/// Everything `dcserve serve` runs with, after the file, the environment and the command line were
/// merged and validated. A plain value: build it with `ConfigurationLoader` (file + environment) or
/// by hand (quick mode, tests); `validate()` is the single place that checks it.
public struct DCServeConfiguration: Sendable, Equatable {
    public var server = Server()
    public var site = Site()
    public var store = Store()
    public var compression = Compression()
    public var admin = Admin()
    public var health = Health()
    /// Dictionary rules in declaration order; the first rule whose `resources` pattern matches a
    /// response's path decides how it is advertised.
    public var rules: [DictionaryRule] = []
    /// Secret for partition ids (HMAC-SHA256) of private rules (`dictionaries.partitionSecret`); nil =
    /// generated once and kept in the store directory (`partition-secret`, mode 0600).
    public var partitionSecret: String?
    /// Out-of-band dictionaries advertised with `Link: <…>; rel="compression-dictionary"`.
    public var outOfBand: [OutOfBandDictionary] = []
    /// HTTPS listener (off unless a certificate is given) and proxy/redirect settings.
    public var tls = TLS()
    /// Upstream APIs that routes may send requests to.
    public var upstreams: [Upstream] = []
    /// Path prefixes → upstream or static site (longest prefix wins). Empty: everything → the site.
    public var routes: [Route] = []
    /// The A/B switch (`experiment.*`); off unless `experiment.key` is set.
    public var experiment = ExperimentSettings()

    public init() {}

    /// `server.memoryBytes` divided among the caches, with the explicit per-cache settings applied.
    public var memoryBudget: MemoryBudget {
        MemoryBudget(total: server.memoryBytes, dictionaryOverride: compression.dictionaryMemoryBytes,
                     variantOverride: compression.variantCacheBytes)
    }

    public struct Server: Sendable, Equatable {
        public var host = "127.0.0.1"
        public var port = 8080
        public var maxConnections = 10_000
        /// A keep-alive connection with no request in progress is closed after this long.
        public var idleTimeoutSeconds: Double = 60
        /// SIGTERM/SIGINT: in-flight requests get this long before connections are closed.
        public var shutdownDeadlineSeconds: Double = 10
        /// The whole request head must arrive within this long of its first byte (slowloris defence).
        public var headerTimeoutSeconds: Double = 10
        /// The request body must arrive within this long after the head.
        public var bodyTimeoutSeconds: Double = 30
        /// A response must make write progress at least this often.
        public var writeTimeoutSeconds: Double = 30
        /// Most requests per keep-alive connection.
        public var maxRequestsPerConnection = 10_000
        /// Largest request body in bytes (larger → 413).
        public var maxBodyBytes = 1 << 20
        /// Event loops serving connections; nil = one per core.
        public var eventLoops: Int?
        /// trace, debug, info, notice, warning, error or critical.
        public var logLevel = "info"
        public var accessLog = true
        /// The memory budget every cache draws from (``MemoryBudget``; `server.memoryBytes`).
        public var memoryBytes = MemoryBudget.defaultTotal
        /// Add `DCServe-Decision` (why this coding: `delta=dcz dict=… saved=93%`, `plain=br reason=…`) to
        /// every response through the compression step. Off by default; quick mode turns it on.
        public var decisionHeader = false
        /// Whether the caches in front honour `Vary` (``SharedCaches``); by default they are assumed not to.
        public var sharedCaches = SharedCaches.ignoreVary
        // TLS-related server settings:
        /// Redirect plain-HTTP requests to the HTTPS listener (301 GET/HEAD, 308 otherwise).
        public var redirectToHTTPS = false
        /// IP literals of TLS-terminating proxies whose `X-Forwarded-Proto` / `Forwarded: proto=` are trusted.
        public var trustedProxies: [String] = []
        public init() {}
    }

    /// The HTTPS listener. Enabled when `certificate` (and `key`) are set.
    public struct TLS: Sendable, Equatable {
        /// Bind address; nil = `server.host`.
        public var host: String?
        public var port = 8443
        /// PEM certificate chain (leaf first) and PEM private key.
        public var certificate: String?
        public var key: String?
        /// Extra certificates chosen by the ClientHello's server name.
        public var sni: [SNICertificate] = []
        public var handshakeTimeoutSeconds: Double = 10
        public var isEnabled: Bool { certificate != nil }
        public init() {}
    }

    /// One SNI entry (`tls.sni.<name>.*`).
    public struct SNICertificate: Sendable, Equatable {
        public var name: String
        public var serverName: String
        public var certificate: String
        public var key: String
        public init(name: String, serverName: String, certificate: String, key: String) {
            self.name = name
            self.serverName = serverName
            self.certificate = certificate
            self.key = key
        }
    }

    public struct Site: Sendable, Equatable {
        /// Document root served as static files.
        public var root = "examples/site"
        public init() {}
    }

    public struct Store: Sendable, Equatable {
        /// Directory of the dictionary store (the SQLite database's, or the files' with `kind` directory).
        public var path = "dictionaries"
        /// Retention: total bytes of stored dictionaries.
        public var maxBytes = 256 << 20
        /// Retention: stored dictionaries per rule (oldest by last use go first).
        public var maxEntriesPerRule = 64
        /// Retention: how long a dictionary is kept after its freshness (max-age) expired.
        public var retainAfterExpirySeconds = 30 * 86_400
        /// `sqlite` (one database file in `path`), `directory` (one file per dictionary in `path`) or
        /// `postgres` (PostgreSQL, with `path` as the bounded local cache); see
        /// `DCServeConfiguration+PostgresStore.swift`.
        public var kind: Kind = .sqlite
        public var postgres = Postgres()
        /// Byte budget of the local cache directory when `kind` is `postgres`.
        public var cacheMaxBytes = 256 << 20
        /// How often `lastServed` updates are written and retention is applied.
        public var housekeepingSeconds = 60
        /// Threads that read dictionaries the library has not loaded from the store (a disk read, or a
        /// PostgreSQL round trip), at most this many at once (`DictionaryLibrary.storeReads`).
        public var readThreads = DictionaryLibrary.defaultStoreReadThreads
        public init() {}
    }

    public struct Compression: Sendable, Equatable {
        /// Codings in server preference order (ties in the client's q-values go to the first).
        public var preference: [ContentCoding] = [.dcz, .dcb, .zstd, .br, .gzip]
        /// Bodies smaller than this are sent as they are.
        public var minimumBytes = 256
        /// Byte budget of the encoded-variant cache; nil = its share of `server.memoryBytes`.
        public var variantCacheBytes: Int?
        /// Memory budget of the loaded dictionaries and their prepared encoder/decoder forms
        /// (`DictionaryLibrary`; at least one dictionary is always kept); nil = its share of
        /// `server.memoryBytes`.
        public var dictionaryMemoryBytes: Int?
        /// Encode deltas from stored previous versions of each static resource at start-up.
        public var precompress = true
        /// Level used on a cache miss, in the request path.
        public var fastLevels: [ContentCoding: Int] = [.dcz: 3, .dcb: 5, .zstd: 3, .br: 5, .gzip: 6]
        /// Level of the background re-encode that replaces the fast variant.
        public var bestLevels: [ContentCoding: Int] = [.dcz: 19, .dcb: 11, .zstd: 19, .br: 11, .gzip: 9]
        /// Add `Server-Timing: compress;desc="dcz-3";dur=…` to compressed responses.
        public var serverTiming = false
        /// For a body of at most 16 KiB whose size in the other coding of its pair (dcb/dcz, br/zstd)
        /// is not known, encode both and send the smaller (``SmallBodyCodingComparison``). Costs one
        /// more encode per such body on a cache miss.
        public var compareSmallBodies = true
        public init() {}
    }

    /// The admin listener: Prometheus metrics (and the health endpoints), apart from the public port.
    public struct Admin: Sendable, Equatable {
        public var enabled = true
        public var host = "127.0.0.1"
        /// 0 picks a free port (logged as `admin listening on http://HOST:PORT`).
        public var port = 9090
        public var metricsPath = "/metrics"
        /// Names the admin listener answers besides `localhost` and IP addresses (`Host` checked
        /// against DNS rebinding, see ``AdminHostCheck``); `*` for every name.
        public var allowedHosts: [String] = []
        public init() {}
    }

    /// Health endpoints, answered on the public listener and on the admin listener.
    public struct Health: Sendable, Equatable {
        /// Liveness: 200 while the process runs.
        public var livenessPath = "/healthz"
        /// Readiness: 200 when the dictionary store is readable and writable and the listeners are open.
        public var readinessPath = "/readyz"
        /// Log health requests in the access log (off: probes would drown it).
        public var accessLog = false
        public init() {}
    }
}

/// Which responses become dictionaries and how they are advertised (`Use-As-Dictionary`).
public struct DictionaryRule: Sendable, Equatable {
    /// How the `id` member is chosen.
    public enum IDSource: Sendable, Equatable {
        case none
        case fixed(String)
        /// The request path of the dictionary response.
        case path
    }

    public var name: String
    /// Path pattern of the responses that are advertised as dictionaries.
    public var resources: String
    /// The `match` member sent to clients (which later requests may use the dictionary).
    public var match: String
    public var matchDest: [String] = []
    public var id: IDSource = .none
    /// `Cache-Control: max-age` of dictionary responses (must be > 0 for browsers to keep them).
    public var maxAgeSeconds = 86_400
    /// Path patterns of the resources that may be compressed against this rule's dictionaries.
    public var compress: [String]
    /// Allow dictionary compression of private responses (cookies, authorization) for this rule.
    public var allowPrivate = false
    /// Live responses: keep the last N versions per URL (and partition) usable as
    /// dictionaries; older ones are refused as if unknown. nil = no per-URL limit (store retention only).
    public var upstreamVersions: Int?
    /// `Cache-Control` of advertised responses (``DictionaryLifetime``).
    public var lifetime: DictionaryLifetime = .automatic
    /// Emit `ttl=N` in `Use-As-Dictionary` (seconds), for clients that honour it. nil = none.
    public var ttlSeconds: Int?
    /// Per-user dictionaries: where the partition comes from. nil = one shared partition.
    public var partition: DictionaryPartitionSource?
    /// History dictionaries (`dictionaries.<rule>.history`): when set, responses are not
    /// advertised one by one; instead a dictionary is built per (`:group` value of `match`, partition)
    /// from recent bodies and offered out of band. See ``HistoryDictionarySettings``.
    public var history: HistoryDictionarySettings?

    public init(name: String, match: String, resources: String? = nil, compress: [String]? = nil) {
        self.name = name
        self.match = match
        self.resources = resources ?? match
        self.compress = compress ?? [match]
    }
}

/// A dictionary file served from a fixed path and advertised with `Link` on matching pages.
public struct OutOfBandDictionary: Sendable, Equatable {
    public var name: String
    /// The dictionary's bytes on disk (e.g. the output of `dcserve train`).
    public var file: String
    /// The path dcserve serves it at.
    public var path: String
    public var match: String
    public var matchDest: [String] = []
    public var id: String?
    public var maxAgeSeconds = 86_400
    /// Pages whose responses carry the `Link` header.
    public var advertiseOn: String
    /// `Access-Control-Allow-Origin` on the dictionary response (browsers fetch it in CORS mode).
    public var allowOrigin: String? = "*"

    public init(name: String, file: String, path: String, match: String, advertiseOn: String) {
        self.name = name
        self.file = file
        self.path = path
        self.match = match
        self.advertiseOn = advertiseOn
    }
}
