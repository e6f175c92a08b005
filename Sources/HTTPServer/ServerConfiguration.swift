#if canImport(Glibc)
import Glibc
#endif
import HTTPCore
import HTTPTypes

/// Everything the server needs to know to run, with documented defaults.
public struct ServerConfiguration: Sendable {
    /// Where to listen. IPv4 ("127.0.0.1", "0.0.0.0") or IPv6 ("::1", "::") literals; port 0 picks a
    /// free port (see `HTTPServer.boundAddresses`). Default: 127.0.0.1:8080.
    public var listenAddresses: [(host: String, port: UInt16)] = [("127.0.0.1", 8080)]
    /// `listen(2)` backlog. Default 1024 (the kernel caps it at net.core.somaxconn).
    public var backlog: Int32 = 1024
    /// Most concurrently open client connections. Beyond it a new connection gets a short
    /// `503 Service Unavailable` with `Connection: close` and is closed at once (so clients see why,
    /// instead of a reset or a hang). Default 16384.
    public var maxConnections: Int = 16_384
    /// Most requests served on one connection; the last response carries `Connection: close`.
    /// Default 10000.
    public var maxRequestsPerConnection: Int = 10_000
    /// A keep-alive connection with no request in progress is closed after this long. Default 60 s.
    public var idleTimeout: Duration = .seconds(60)
    /// The whole request head must arrive within this long of its first byte (slowloris defence);
    /// on expiry the connection gets 408 and is closed. Default 10 s.
    public var headerReadTimeout: Duration = .seconds(10)
    /// The request body must arrive within this long after the head. Default 30 s.
    public var bodyReadTimeout: Duration = .seconds(30)
    /// A response must make write progress at least this often (a client that stops reading is
    /// dropped). Default 30 s.
    public var writeTimeout: Duration = .seconds(30)
    /// A connection that ends with input it has not read (an error answered mid-request, a
    /// `Connection: close` response followed by more pipelined requests) first sends every queued
    /// response, then shuts its sending side and reads and discards input (RFC 9112 §9.6), so the
    /// client can read all of it instead of losing it to a reset. Lingering ends when the client
    /// closes, after this long, or after `lingerMaxBytes`. Default 10 s.
    public var lingerTimeout: Duration = .seconds(10)
    /// Most bytes discarded while lingering. Default 64 MiB.
    public var lingerMaxBytes: Int = 64 << 20
    /// Requests for which this returns true get their body as a stream (`HTTPServerRequest.bodyStream`,
    /// see `RequestBodyStream`) instead of buffered whole; `limits.maxBodyBytes` does not apply to
    /// them (the consumer bounds what it keeps). Called on the event loop with each request head that
    /// has a body. Nil (default): every body is buffered.
    public var streamsRequestBody: (@Sendable (HTTPRequest) -> Bool)?
    /// Parser size limits (request line 8 KiB, head 16 KiB, 100 fields, body 1 MiB).
    public var limits = RequestParserLimits()
    /// Value of the `Server` response field; nil sends none. Default "dcserve".
    public var serverName: String? = "dcserve"
    /// Bytes read per `read(2)`; also the input buffer a connection holds while a request is in
    /// progress (released when idle). Default 16 KiB.
    public var readChunkSize: Int = 16 * 1024
    /// Output buffered per connection before the server stops producing more (back-pressure for
    /// pipelined responses and streams). Default 256 KiB.
    public var writeHighWatermark: Int = 256 * 1024
    /// File bodies up to this size are read into the response buffer and written together with the
    /// head in one system call; larger ones are sent with `sendfile(2)`. Default 32 KiB.
    public var inlineFileBodyLimit: Int = 32 * 1024
    /// Event loops (serial queues each driving many connections, see `EventLoop`). Handlers run on
    /// them, so they must not block. Default: one per active processor.
    public var eventLoopCount: Int = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))

    // MARK: TLS and proxies (kept together so merges with the HTTP settings above stay simple)

    /// HTTPS listeners, side by side with the plain `listenAddresses` (which may be empty). Need
    /// `tls`. Port 0 picks a free port. Default: none.
    public var tlsListenAddresses: [(host: String, port: UInt16)] = []
    /// Certificates, SNI and handshake timeout of the HTTPS listeners. Default nil (no TLS).
    public var tls: TLSConfiguration?
    /// Answer requests whose scheme is http (plain listener, not marked https by a trusted proxy)
    /// with a redirect to https. Default false.
    public var redirectToHTTPS = false
    /// Port named in the redirect's `Location`; nil means the first HTTPS listener's bound port.
    public var httpsRedirectPort: UInt16?
    /// Proxies whose `Forwarded: proto=` / `X-Forwarded-Proto` set the request's scheme. Default none.
    public var trustedProxies = TrustedProxies()

    public init() {}
}

extension Duration {
    /// Whole nanoseconds (saturating), for Dispatch deadlines.
    var nanoseconds: UInt64 {
        let (s, a) = components
        if s < 0 { return 0 }
        return UInt64(s) &* 1_000_000_000 &+ UInt64(a / 1_000_000_000)
    }
}

extension ServerConfiguration {
    /// How often event loops check connection deadlines: a quarter of the shortest timeout, between
    /// 10 ms and 250 ms, so a timeout fires at most that much late.
    var deadlineSweepInterval: Duration {
        var shortest = min(idleTimeout, headerReadTimeout, bodyReadTimeout, writeTimeout)
        if let tls { shortest = min(shortest, tls.handshakeTimeout) }
        return min(max(shortest / 4, .milliseconds(10)), .milliseconds(250))
    }
}
