import HTTPCore

/// Settings of one `HTTPClient` (one upstream: its servers, timeouts and pool). A plain value.
public struct HTTPClientConfiguration: Sendable {
    /// The upstream's servers, used round robin; a server that fails to connect is skipped for
    /// `failureBackoff` (unless every server is skipped: then they are all tried again).
    public var servers: [UpstreamServer]
    /// A TCP connection (and its TLS handshake) must be established within this long.
    public var connectTimeout: Duration = .seconds(5)
    /// Writing the request fails when no byte could be written for this long.
    public var sendTimeout: Duration = .seconds(60)
    /// Reading the response fails when no byte arrived for this long (not counted while the
    /// delegate withholds `resume`).
    public var readTimeout: Duration = .seconds(60)
    /// With `Expect: 100-continue`, the body is sent after a `100 Continue` or after this long,
    /// whichever comes first (RFC 9110 §10.1.1).
    public var expectContinueTimeout: Duration = .seconds(1)
    /// Idle keep-alive connections kept per event loop and server; more are closed.
    public var maxIdleConnectionsPerLoop: Int = 32
    /// An idle pooled connection is closed after this long.
    public var idleTimeout: Duration = .seconds(60)
    /// A connection is closed after this many exchanges.
    public var maxRequestsPerConnection: Int = 1000
    /// A server whose connect failed (refused, unreachable, timed out) is skipped this long.
    public var failureBackoff: Duration = .seconds(10)
    /// Limits for parsing responses.
    public var limits = ResponseParserLimits()
    /// TLS settings for `https` servers (nil = verify against the system's CA store).
    public var tls: TLSClientConfiguration?

    public init(servers: [UpstreamServer]) {
        self.servers = servers
    }
}
