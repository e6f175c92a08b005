import HTTPServer
import HTTPTypes
import Prometheus

/// The admin listener's handler: Prometheus text exposition at `metricsPath` (gauges refreshed first
/// by `beforeScrape`), 404 elsewhere (the health paths are answered by `HealthMiddleware` around it).
public struct AdminHandler: HTTPHandler {
    let registry: PrometheusCollectorRegistry
    let metricsPath: String
    let beforeScrape: @Sendable () -> Void

    public init(registry: PrometheusCollectorRegistry, metricsPath: String, beforeScrape: @escaping @Sendable () -> Void) {
        self.registry = registry
        self.metricsPath = metricsPath
        self.beforeScrape = beforeScrape
    }

    public func handle(_ request: HTTPServerRequest, respond: @escaping @Sendable (HTTPServerResponse) -> Void) {
        guard request.pathWithoutQuery == metricsPath else {
            return respond(.text(.notFound, "404 Not Found: the admin listener serves \(metricsPath) and the health paths"))
        }
        guard request.head.method == .get || request.head.method == .head else {
            return respond(.text(.methodNotAllowed, "405 Method Not Allowed", headerFields: [.allow: "GET, HEAD"]))
        }
        beforeScrape()
        respond(HTTPServerResponse(status: .ok, headerFields: [
            .contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store",
        ], body: .bytes(registry.emitToBuffer())))
    }
}
