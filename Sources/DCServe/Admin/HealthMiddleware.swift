import HTTPServer
import HTTPTypes

/// Answers the liveness and readiness paths before anything else sees the request.
///
/// Liveness is 200 whenever the process can answer. Readiness asks `readiness` (store readable and
/// writable, listeners open) and answers 200 `ready` or 503 with the reason. Responses are tiny,
/// uncacheable plain text. Thread-safe if `readiness` is.
public struct HealthMiddleware: HTTPMiddleware {
    public let livenessPath: String
    public let readinessPath: String
    let readiness: Readiness

    public init(livenessPath: String, readinessPath: String, readiness: Readiness) {
        self.livenessPath = livenessPath
        self.readinessPath = readinessPath
        self.readiness = readiness
    }

    public func handle(_ request: HTTPServerRequest, next: any HTTPHandler,
                       respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        let path = request.pathWithoutQuery
        guard path == livenessPath || path == readinessPath else { return next.handle(request, respond: respond) }
        let noStore: HTTPFields = [.cacheControl: "no-store"]
        if path == livenessPath { return respond(.text(.ok, "ok", headerFields: noStore)) }
        if let reason = readiness.problem() {
            respond(.text(.serviceUnavailable, "not ready: \(reason)", headerFields: noStore))
        } else if let degraded = readiness.degradation() {
            // Still ready: a load balancer must keep sending traffic (answers come from local caches).
            respond(.text(.ok, "ready (degraded: \(degraded))", headerFields: noStore))
        } else {
            respond(.text(.ok, "ready", headerFields: noStore))
        }
    }
}
