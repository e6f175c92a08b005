import HTTPCore

/// Turns a request into a response. Implementations must call `respond` exactly once, from any
/// thread, synchronously or later. Calling it synchronously (before `handle` returns) is cheapest:
/// the connection then writes without an extra queue hop. `respond` consumes the response: whoever
/// receives it owns it, so a middleware edits the response it is handed in place (a value passed on
/// at its last use is moved, not copied, and its field storage is not shared with a copy left behind).
///
/// `handle` runs on the connection's event loop, a serial queue shared with many other connections
/// (see `EventLoop`): do not block in it. Work that takes more than a fraction of a millisecond (large
/// compressions, I/O on slow disks, network calls) belongs on another queue or a Task, with `respond`
/// called from there.
public protocol HTTPHandler: Sendable {
    func handle(_ request: HTTPServerRequest, respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void)
}

/// Wraps a handler: may inspect or change the request, call `next` (or not), and change the response.
/// Same calling contract as `HTTPHandler`.
public protocol HTTPMiddleware: Sendable {
    func handle(_ request: HTTPServerRequest, next: any HTTPHandler,
                respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void)
}

/// A handler made from a closure.
public struct ClosureHandler: HTTPHandler {
    let body: @Sendable (HTTPServerRequest, @escaping @Sendable (consuming HTTPServerResponse) -> Void) -> Void

    public init(_ body: @escaping @Sendable (HTTPServerRequest, @escaping @Sendable (consuming HTTPServerResponse) -> Void) -> Void) {
        self.body = body
    }

    public func handle(_ request: HTTPServerRequest, respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        body(request, respond)
    }
}

/// A handler wrapped by one middleware.
public struct MiddlewareHandler: HTTPHandler {
    public let middleware: any HTTPMiddleware
    public let next: any HTTPHandler

    public init(middleware: any HTTPMiddleware, next: any HTTPHandler) {
        self.middleware = middleware
        self.next = next
    }

    public func handle(_ request: HTTPServerRequest, respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        middleware.handle(request, next: next, respond: respond)
    }
}

extension HTTPHandler {
    /// Wraps this handler in `middlewares`; the first one listed is outermost (sees the request first
    /// and the response last).
    public func wrapped(in middlewares: [any HTTPMiddleware]) -> any HTTPHandler {
        var handler: any HTTPHandler = self
        for m in middlewares.reversed() { handler = MiddlewareHandler(middleware: m, next: handler) }
        return handler
    }
}
