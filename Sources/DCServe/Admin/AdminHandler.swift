import DictionaryTransport
import HTTPServer
import HTTPTypes
import Prometheus

/// The admin listener's handler: Prometheus text exposition at `metricsPath` (gauges refreshed first
/// by `beforeScrape`), the live view (``LiveViewPage``) at `/dcserve` and `/` with its data at
/// `/dcserve/live.json` when `liveView` is given, 404 elsewhere (the health paths are answered by
/// `HealthMiddleware` around it). GET and HEAD only.
public struct AdminHandler: HTTPHandler {
    /// What the live view reads: the dictionary store's records and the traffic seen.
    public struct LiveViewSource: Sendable {
        public let store: any DictionaryStore
        public let activity: LiveActivity
        public init(store: any DictionaryStore, activity: LiveActivity) {
            self.store = store
            self.activity = activity
        }
    }

    let registry: PrometheusCollectorRegistry
    let metricsPath: String
    let beforeScrape: @Sendable () -> Void
    let liveView: LiveViewSource?

    public static let liveViewPath = "/dcserve"
    public static let liveDataPath = "/dcserve/live.json"

    public init(registry: PrometheusCollectorRegistry, metricsPath: String, liveView: LiveViewSource? = nil,
                beforeScrape: @escaping @Sendable () -> Void) {
        self.registry = registry
        self.metricsPath = metricsPath
        self.beforeScrape = beforeScrape
        self.liveView = liveView
    }

    public func handle(_ request: HTTPServerRequest, respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        let path = request.pathWithoutQuery
        let isLive = liveView != nil && (path == Self.liveViewPath || path == "/" || path == Self.liveDataPath)
        guard path == metricsPath || isLive else {
            let also = liveView == nil ? "" : ", \(Self.liveViewPath) (live view)"
            return respond(.text(.notFound, "404 Not Found: the admin listener serves \(metricsPath)\(also) and the health paths"))
        }
        guard request.method == .get || request.method == .head else {
            return respond(.text(.methodNotAllowed, "405 Method Not Allowed", headerFields: [.allow: "GET, HEAD"]))
        }
        if path == metricsPath {
            beforeScrape()
            return respond(HTTPServerResponse(status: .ok, headerFields: [
                .contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store",
            ], body: .bytes(registry.emitToBuffer())))
        }
        guard let liveView else { return respond(.text(.notFound, "404 Not Found")) }
        if path == Self.liveDataPath {
            let snapshot = LiveViewSnapshot(store: liveView.store, activity: liveView.activity)
            return respond(HTTPServerResponse(status: .ok, headerFields: [
                .contentType: "application/json", .cacheControl: "no-store",
            ], body: .bytes(snapshot.json())))
        }
        respond(HTTPServerResponse(status: .ok, headerFields: [
            .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
            HTTPField.Name("Content-Security-Policy")!:
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self'",
            HTTPField.Name("X-Content-Type-Options")!: "nosniff",
        ], body: .bytes(Self.page)))
    }

    static let page = Array(LiveViewPage.html.utf8)
}
