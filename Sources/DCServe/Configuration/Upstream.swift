/// A named upstream API that routes proxy to (`upstreams.names` lists the names, `upstreams.<name>.*`
/// holds each). A plain value; `DCServeConfiguration.validate()` checks it (servers parse as
/// `UpstreamServerURL`s, durations and sizes in range).
public struct Upstream: Sendable, Equatable {
    public var name: String
    /// Server base URLs, used round robin: `"http://127.0.0.1:8000"`, `"https://api.example:443"`.
    public var servers: [String]
    public var connectTimeoutSeconds: Double = 5
    /// No progress writing the request for this long → 504.
    public var sendTimeoutSeconds: Double = 60
    /// No byte of the response for this long → 504.
    public var readTimeoutSeconds: Double = 60
    /// Idle keep-alive connections kept per event loop and server.
    public var maxIdleConnections: Int = 32
    public var idleTimeoutSeconds: Double = 60
    /// A WebSocket (or other upgraded) tunnel through which no byte moved either way for this long is closed.
    public var tunnelIdleTimeoutSeconds: Double = 300
    public var maxRequestsPerConnection: Int = 1000
    /// A server that failed is skipped this long.
    public var failureBackoffSeconds: Double = 10
    /// The `Host` field sent upstream.
    public var host: HostPolicy = .keep
    /// Append the client's address to `X-Forwarded-For`.
    public var forwardedFor = true
    /// Send `X-Forwarded-Proto`.
    public var forwardedProto = true
    /// Send RFC 7239 `Forwarded`.
    public var forwarded = false
    /// Add a `Via` field.
    public var via = true
    /// Forward `Available-Dictionary` / `Dictionary-ID` (the upstream does dictionary transport itself).
    public var upstreamHandlesDictionaries = false
    /// Forward `TRACE` requests; when false, dcserve answers them 405 (as nginx does).
    public var forwardTrace = false
    /// Response bodies up to this size are buffered for compression and dictionary storage; larger ones stream.
    public var maxBufferedBodyBytes: Int = 8 << 20
    /// Cap on a gzip/br/zstd upstream body decoded to identity.
    public var maxDecodedBodyBytes: Int = 64 << 20
    /// PEM CA bundle that verifies `https` servers; nil = the system store.
    public var tlsCAFile: String? = nil

    public init(name: String, servers: [String]) {
        self.name = name
        self.servers = servers
    }

    /// `servers` parsed (valid once `DCServeConfiguration.validate()` passed).
    public func serverURLs() throws -> [UpstreamServerURL] {
        try servers.map { try UpstreamServerURL(parsing: $0) }
    }

    /// What the proxy sends as `Host`.
    public enum HostPolicy: Sendable, Equatable {
        /// The client's `Host`, unchanged.
        case keep
        /// The upstream server's `host[:port]`.
        case upstream
        /// This value.
        case fixed(String)

        /// `"keep"`, `"upstream"`, or any other string as a fixed value.
        public init(_ text: String) {
            switch text {
            case "keep": self = .keep
            case "upstream": self = .upstream
            default: self = .fixed(text)
            }
        }
    }
}
