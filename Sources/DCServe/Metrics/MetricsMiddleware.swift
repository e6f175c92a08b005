import HTTPServer
import HTTPTypes

/// Outermost middleware: counts every response by status and content coding, and its body bytes.
/// Stateless apart from the thread-safe `DCServeMetrics`.
public struct MetricsMiddleware: HTTPMiddleware {
    let metrics: DCServeMetrics

    public init(metrics: DCServeMetrics) { self.metrics = metrics }

    public func handle(_ request: HTTPServerRequest, next: any HTTPHandler,
                       respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        let isHead = request.method == .head
        next.handle(request) { response in
            let coding = response.headerValue(.contentEncoding) ?? "identity"
            let bytes = isHead ? 0 : response.body.knownLength ?? 0
            metrics.response(status: response.statusCode, coding: coding, bodyBytes: bytes)
            respond(response)
        }
    }
}
