import HTTPServer
import HTTPTypes

/// Sends each request to the handler of the longest route prefix that begins its path (the path
/// without the query in `RoutePath.normalized` form, compared byte for byte: `/api/` takes `/api/x`,
/// not `/api`). A request no prefix covers gets 404; one whose dot segments climb above the root,
/// 400; `OPTIONS *` goes to the route taking `/` when it proxies. Built once from the configuration; immutable, so thread-safe.
public struct RouteHandler: HTTPHandler {
    struct Entry: Sendable {
        let prefix: String
        let name: String
        let handler: any HTTPHandler
    }

    /// Longest prefix first, so the first match is the longest.
    let entries: [Entry]

    /// `routes`: (name, prefix, handler); prefixes are unique (checked by `DCServeConfiguration.validate()`).
    public init(_ routes: [(name: String, prefix: String, handler: any HTTPHandler)]) {
        entries = routes.map { Entry(prefix: $0.prefix, name: $0.name, handler: $0.handler) }
            .sorted { $0.prefix.utf8.count > $1.prefix.utf8.count }
    }

    /// Name of the route that takes `path` (nil: none, 404).
    public func routeName(for path: Substring) -> String? { RoutePath.normalized(path).flatMap { entry(for: $0)?.name } }

    /// Whether the request's body should reach its handler as a stream: true when the route is a
    /// reverse proxy (it forwards the body as it arrives; no size limit of its own).
    public func streamsRequestBody(_ head: HTTPRequest) -> Bool {
        let target = head.path ?? "/"
        let path = target[..<(target.firstIndex { $0 == "?" || $0 == "#" } ?? target.endIndex)]
        guard let normalized = RoutePath.normalized(path) else { return false }
        return entry(for: normalized)?.handler is ReverseProxyHandler
    }

    func entry(for normalizedPath: String) -> Entry? {
        entries.first { normalizedPath.utf8.starts(with: $0.prefix.utf8) }
    }

    public func handle(_ request: HTTPServerRequest, respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        if request.pathWithoutQuery == "*" && request.method == .options { return serverWideOptions(request, respond) }
        guard let path = RoutePath.normalized(request.pathWithoutQuery) else {
            return respond(.text(.badRequest, "Bad Request: the path climbs above the root"))
        }
        guard let entry = entry(for: path) else {
            return respond(.text(.notFound, "Not Found"))
        }
        entry.handler.handle(request, respond: respond)
    }

    /// `OPTIONS *` (the server as a whole, RFC 9110 §9.3.7): forwarded, still `*`, when the route
    /// taking `/` is a reverse proxy (the app behind it is the server); otherwise answered here, 200
    /// with the methods static files take.
    private func serverWideOptions(_ request: HTTPServerRequest, _ respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        if let root = entry(for: "/"), root.handler is ReverseProxyHandler {
            return root.handler.handle(request, respond: respond)
        }
        respond(HTTPServerResponse(status: .ok, headerFields: [.allow: "GET, HEAD, OPTIONS"], body: .bytes([])))
    }
}
