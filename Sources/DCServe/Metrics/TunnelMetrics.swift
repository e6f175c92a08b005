import CoreMetrics
import HTTPCore
import Locking

/// The upgrade tunnels' metrics (WebSocket through the proxy), brought up to date from their
/// ``ByteTunnelCounters`` at every scrape:
///
/// | metric | labels | meaning |
/// |---|---|---|
/// | `dcserve_open_tunnels` | | tunnels open now |
/// | `dcserve_tunnels_total` | | tunnels opened (upstream answered `101`) |
/// | `dcserve_tunnel_bytes_total` | direction | bytes written on: `client_to_upstream`, `upstream_to_client` |
///
/// Thread-safe: the metric handles are immutable; the last reported totals sit behind a `Locked`.
final class TunnelMetrics: Sendable {
    private let open = Gauge(label: "dcserve_open_tunnels")
    private let opened = Counter(label: "dcserve_tunnels_total")
    private let toUpstream = Counter(label: "dcserve_tunnel_bytes_total", dimensions: [("direction", "client_to_upstream")])
    private let toClient = Counter(label: "dcserve_tunnel_bytes_total", dimensions: [("direction", "upstream_to_client")])
    private let reported = Locked((opened: 0, toUpstream: 0, toClient: 0))

    /// Reports `counters` (the client is each tunnel's first end).
    func refresh(from counters: ByteTunnelCounters) {
        let now = (opened: counters.opened, toUpstream: counters.bytesFromFirst, toClient: counters.bytesFromSecond)
        let delta = reported.withLock { last in
            defer { last = now }
            return (max(0, now.opened - last.opened), max(0, now.toUpstream - last.toUpstream), max(0, now.toClient - last.toClient))
        }
        open.record(counters.open)
        opened.increment(by: delta.0)
        toUpstream.increment(by: delta.1)
        toClient.increment(by: delta.2)
    }
}
