import DictionaryCodec
import HTTPClient
import HTTPCore
import HTTPServer
import HTTPTypes
import Logging

/// Forwards requests to one upstream (RFC 9110 §7.6) with ``HTTPClient`` on the event loop the
/// request arrived on (no thread hop), and relays the answer (``ProxyResponseRelay``).
///
/// - Every method is forwarded, the request target as received (`*` for `OPTIONS *`), except what
///   ``ProxyMethodRules`` answers here (TRACE unless forwarded, `Max-Forwards: 0`).
/// - The request head goes through ``ProxyRequestHeaders`` (hop-by-hop fields, forwarding fields,
///   Host, dictionary fields, Accept-Encoding). A streamed request body (`bodyStream`, opted in by
///   `RouteHandler.streamsRequestBody`) is forwarded as it arrives, with back-pressure
///   (``StreamedRequestBody``; `100 Continue` goes to the client when the upstream connection pulls
///   the first part); a buffered one is sent whole with `Content-Length`.
/// - Responses up to `maxBufferedBodyBytes` are buffered and handed on as bytes (decoded to identity
///   by ``UpstreamBodyDecoder`` when they are gzip/br/zstd and may be transformed), so the compression
///   middleware can encode them and store dictionaries; larger ones, and streams (SSE), are relayed
///   as a `.stream` body with back-pressure: the upstream is read only as fast as the client takes it.
/// - A WebSocket (or other) upgrade (``UpgradeRequest``) is forwarded with its `Upgrade` field and
///   `Connection: upgrade`; the upstream's `101` turns both connections into a byte tunnel
///   (``UpgradeTunnel``), any other answer is relayed as usual.
/// - Interim responses (1xx other than 100 and 101, e.g. `103 Early Hints`) go on to the client as
///   they arrive, ahead of the final response (``ProxyResponseRelay``); HTTP/1.0 clients get none.
/// - Upstream failures before the head become 502 (refused, reset, invalid) or 504 (timeout) with a
///   short body and a log line naming the upstream and the reason; after the head, the client's
///   response is cut short (the connection closes), never left hanging.
///
/// Thread-safety: immutable; `handle` may run on any event loop concurrently.
public final class ReverseProxyHandler: HTTPHandler {
    public let name: String
    let client: HTTPClient
    let policy: ProxyHeaderPolicy
    let upstreamAuthority: String
    let maxBufferedBodyBytes: Int
    let maxDecodedBodyBytes: Int
    /// Whether TRACE goes upstream (`upstreams.<name>.forwardTrace`); else dcserve answers 405.
    let forwardTrace: Bool
    /// How long an upgraded connection (WebSocket) may stay without a byte either way.
    let tunnelIdleTimeout: Duration
    let logger: Logger
    /// What each exchange's relay shares (one reference per exchange).
    let relaySettings: ProxyResponseRelay.Settings

    /// Builds the handler and its client for `upstream` (validated configuration). Requests are
    /// executed on the loop they arrived on; a request without one (built in process) uses
    /// ``FallbackLoop``.
    public init(upstream: Upstream, logger: Logger) throws {
        let urls = try upstream.serverURLs()
        name = upstream.name
        var configuration = HTTPClientConfiguration(servers: urls.map { UpstreamServer(host: $0.host, port: $0.port, tls: $0.tls) })
        configuration.connectTimeout = .configured(seconds: upstream.connectTimeoutSeconds)
        configuration.sendTimeout = .configured(seconds: upstream.sendTimeoutSeconds)
        configuration.readTimeout = .configured(seconds: upstream.readTimeoutSeconds)
        configuration.maxIdleConnectionsPerLoop = upstream.maxIdleConnections
        configuration.idleTimeout = .configured(seconds: upstream.idleTimeoutSeconds)
        configuration.maxRequestsPerConnection = upstream.maxRequestsPerConnection
        configuration.failureBackoff = .configured(seconds: upstream.failureBackoffSeconds)
        if urls.contains(where: \.tls) {
            configuration.tls = TLSClientConfiguration(caFile: upstream.tlsCAFile)
        }
        client = HTTPClient(configuration: configuration, loops: FallbackLoop.group)
        policy = ProxyHeaderPolicy(upstream)
        upstreamAuthority = urls.first.map { UpstreamServer(host: $0.host, port: $0.port, tls: $0.tls).authority } ?? ""
        maxBufferedBodyBytes = upstream.maxBufferedBodyBytes
        maxDecodedBodyBytes = upstream.maxDecodedBodyBytes
        forwardTrace = upstream.forwardTrace
        tunnelIdleTimeout = .configured(seconds: upstream.tunnelIdleTimeoutSeconds)
        self.logger = logger
        relaySettings = .init(upstream: name, maxBufferedBodyBytes: maxBufferedBodyBytes, maxDecodedBodyBytes: maxDecodedBodyBytes,
                              policy: policy, logger: logger)
    }

    /// The factory `DCServeServer` takes: one handler per configured upstream.
    public static func factory(logger: Logger) -> UpstreamHandlerFactory {
        { upstream in try ReverseProxyHandler(upstream: upstream, logger: logger) }
    }

    public func handle(_ request: HTTPServerRequest, respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        let maxForwards: Int?
        switch ProxyMethodRules.decide(request, forwardTrace: forwardTrace) {
        case .respond(let response): return respond(response)
        case .forward(let remaining): maxForwards = remaining
        }
        let context = ProxyRequestHeaders.Context(
            clientAddress: request.remoteAddress, clientHost: request.remoteHost, scheme: request.head.scheme ?? "http",
            protocolVersion: request.version == .http1_1 ? "1.1" : "\(request.version.major).\(request.version.minor)",
            upstreamAuthority: upstreamAuthority, fromTrustedProxy: request.fromTrustedProxy)
        let upgrade = UpgradeRequest.protocols(request)
        var head: HTTPRequest
        var fieldLines: [UInt8]?
        if let received = request.received, received.targetForm == .origin, maxForwards == nil, upgrade == nil {
            // The usual request: its kept fields are copied from the received bytes.
            head = request.head
            head.headerFields = HTTPFields()  // an empty list, no storage
            fieldLines = ProxyRequestHeaders.fieldLines(received, authority: request.head.authority, context: context, policy: policy)
        } else {
            head = ProxyRequestHeaders.make(request.head, context: context, policy: policy)
            if let maxForwards { head.headerFields[.maxForwards] = String(maxForwards) }
            if let upgrade { head.headerFields[.upgrade] = upgrade }
        }
        let fields = request.head.headerFields
        let body: HTTPClientRequestBody
        if let stream = request.bodyStream {
            body = .stream(StreamedRequestBody(stream), length: stream.expectedLength.map { Int($0) })
        } else if fields[.contentLength] != nil || fields[.transferEncoding] != nil || !request.body.isEmpty {
            body = .bytes(request.body)
        } else {
            body = .none
        }
        let relay = ProxyResponseRelay(settings: relaySettings, request: request.head, interim: request.interim, respond: respond)
        var forwarded = HTTPClientRequest(head: head, body: body)
        forwarded.fieldLines = fieldLines
        let delegate: any HTTPClientResponseDelegate
        if upgrade != nil {
            forwarded.upgrade = true
            delegate = UpgradeTunnel(relay: relay, policy: policy, idleTimeout: tunnelIdleTimeout, respond: respond)
        } else {
            delegate = relay
        }
        let exchange = client.execute(forwarded, on: request.eventLoop, delegate: delegate)
        relay.attach(exchange)
    }
}

/// One event loop, shared by every proxy handler, for exchanges whose request came from no loop
/// (in-process callers). Made when the first handler is built.
enum FallbackLoop {
    static let group = EventLoopGroup(count: 1, sweepInterval: .milliseconds(100))
}

extension ProxyHeaderPolicy {
    /// The header policy an upstream's configuration asks for.
    public init(_ upstream: Upstream) {
        self.init()
        switch upstream.host {
        case .keep: host = .keep
        case .upstream: host = .upstream
        case .fixed(let value): host = .fixed(value)
        }
        forwardedFor = upstream.forwardedFor
        forwardedProto = upstream.forwardedProto
        forwarded = upstream.forwarded
        via = upstream.via
        upstreamHandlesDictionaries = upstream.upstreamHandlesDictionaries
    }
}
