import HTTPServer

/// Builds the handler that proxies to one configured upstream. `DCServeApplication` calls it once
/// per upstream that a route names, at start-up; an error stops the start with the upstream's name.
public typealias UpstreamHandlerFactory = @Sendable (Upstream) throws -> any HTTPHandler

/// The stand-in until a reverse proxy is plugged in: every request gets `502 Bad Gateway`, "no proxy".
public struct NoProxyHandler: HTTPHandler {
    public let upstream: String
    public init(upstream: String) { self.upstream = upstream }

    public static let factory: UpstreamHandlerFactory = { NoProxyHandler(upstream: $0.name) }

    public func handle(_ request: HTTPServerRequest, respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        respond(.text(.badGateway, "no proxy for upstream \(upstream)"))
    }
}
