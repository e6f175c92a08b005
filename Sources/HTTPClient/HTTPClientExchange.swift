import HTTPCore
import HTTPTypes

/// A handle on one running exchange. `cancel()` ends it from any thread: the upstream connection is
/// closed (never pooled half-read) and the delegate gets `didFail(.cancelled)` unless the exchange
/// had already finished or failed. Thread-safe (the work hops to the exchange's loop queue). A value:
/// copies name the same exchange (the handle is no allocation of its own).
public struct HTTPClientExchange: Sendable {
    let context: ExchangeContext

    init(context: ExchangeContext) { self.context = context }

    public func cancel() {
        let context = context
        context.loop.execute { context.cancel() }
    }
}

/// Loop-confined state of one exchange across its attempts (another server after a failed connect,
/// one retry on a fresh connection). Guarantees the delegate one terminal callback.
///
/// Thread-safety: used on `loop.queue` only, hence `@unchecked Sendable`.
final class ExchangeContext: @unchecked Sendable {
    let request: HTTPClientRequest
    /// Released after the terminal callback, so a delegate that keeps its `HTTPClientExchange` handle
    /// forms no lasting cycle.
    private(set) var delegate: (any HTTPClientResponseDelegate)?
    let loop: EventLoop
    /// Servers whose connect failed for this exchange (not tried again for it).
    var failedServers: Set<UpstreamServer> = []
    /// The one retry on a fresh connection was used.
    var retried = false
    /// The connection running the exchange now, if any.
    var connection: UpstreamConnection?
    private(set) var isDone = false

    init(request: HTTPClientRequest, delegate: any HTTPClientResponseDelegate, loop: EventLoop) {
        self.request = request
        self.delegate = delegate
        self.loop = loop
    }

    /// True when the request can be sent again (its body is not a consumed stream).
    var isReplayable: Bool {
        if case .stream = request.body { return false }
        return request.isIdempotent
    }

    func finish(trailers: HTTPFields?) {
        guard !isDone else { return }
        isDone = true
        connection = nil
        let delegate = delegate
        self.delegate = nil
        delegate?.didFinish(trailers: trailers)
    }

    func fail(_ error: HTTPClientError) {
        guard !isDone else { return }
        isDone = true
        connection = nil
        let delegate = delegate
        self.delegate = nil
        delegate?.didFail(error)
    }

    /// The server switched protocols: the terminal callback of an upgrade (the delegate owns
    /// `detached`; closed here when nobody takes it).
    func switched(_ head: ParsedResponseHead, _ detached: DetachedConnection) {
        guard !isDone, let delegate else { detached.close(); return }
        isDone = true
        connection = nil
        self.delegate = nil
        delegate.didSwitchProtocols(head, connection: detached)
    }

    func cancel() {
        guard !isDone else { return }
        let connection = connection
        self.connection = nil
        connection?.abandon()
        fail(.cancelled)
    }
}
