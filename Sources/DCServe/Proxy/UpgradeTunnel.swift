import HTTPClient
import HTTPCore
import HTTPServer
import HTTPTypes

/// The response side of a proxied upgrade request (``UpgradeRequest``): an upstream's `101
/// Switching Protocols` is relayed to the client (hop-by-hop fields removed, its `Upgrade` kept,
/// `Connection: upgrade` written by the server) and the two connections become one ``ByteTunnel``
/// (the client end first) on the request's event loop; any other answer, and any failure, goes
/// through the ordinary ``ProxyResponseRelay`` (a refusal reaches the client as it was sent; an
/// upstream that is down is 502). Nothing of a tunnel passes the dictionary machinery: its `101`
/// has no body, and the bytes after it never become a response.
///
/// Thread-safety: immutable; the client calls it on the exchange's loop.
final class UpgradeTunnel: HTTPClientResponseDelegate, Sendable {
    /// Every tunnel of the process: open tunnels and bytes each way, for `/metrics`.
    static let counters = ByteTunnelCounters()

    private let relay: ProxyResponseRelay
    private let policy: ProxyHeaderPolicy
    private let settings: ByteTunnel.Settings
    private let respond: @Sendable (consuming HTTPServerResponse) -> Void

    init(relay: ProxyResponseRelay, policy: ProxyHeaderPolicy, idleTimeout: Duration,
         respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        self.relay = relay
        self.policy = policy
        settings = ByteTunnel.Settings(idleTimeout: idleTimeout, counters: Self.counters)
        self.respond = respond
    }

    func didSwitchProtocols(_ head: ParsedResponseHead, connection upstream: DetachedConnection) {
        var response = HTTPServerResponse(head: ProxyResponseHeaders.make(head, protocolVersion: "1.1", policy: policy))
        if let upgrade = head.values(of: "upgrade").first { response.head.headerFields[.upgrade] = upgrade }
        let settings = settings
        // A client connection that can no longer switch drops this closure: `upstream` then closes.
        response.switchProtocols = { client in ByteTunnel.start(client, upstream, settings: settings) }
        respond(response)
    }

    func didReceiveInformational(_ head: HTTPResponse) { relay.didReceiveInformational(head) }
    func didReceiveHead(parsed head: ParsedResponseHead) { relay.didReceiveHead(parsed: head) }
    func didReceiveHead(_ head: HTTPResponse, bodyLength: HTTPBodyLength) { relay.didReceiveHead(head, bodyLength: bodyLength) }
    func didReceiveBodyPart(_ bytes: ArraySlice<UInt8>, resume: @escaping @Sendable () -> Void) {
        relay.didReceiveBodyPart(bytes, resume: resume)
    }
    func didFinish(trailers: HTTPFields?) { relay.didFinish(trailers: trailers) }
    func didFail(_ error: HTTPClientError) { relay.didFail(error) }
}
