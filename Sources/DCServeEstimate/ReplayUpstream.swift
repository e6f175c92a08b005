import Foundation
import HTTPServer
import HTTPTypes
import Logging
import Locking

/// An in-process HTTP server on 127.0.0.1 (a free port) that answers with recorded responses: the
/// upstream dcserve proxies to during a replay.
///
/// Responses are queued per (method, path and query) in recording order; each request takes the next
/// one, and once a queue is down to its last response that one is repeated. A request nothing was
/// recorded for gets `404` with `DCServe-Replay: not-recorded`. Recorded bodies are served as identity
/// (HAR bodies are decoded), so `Content-Encoding`, framing and hop-by-hop fields of the recording are
/// dropped; every other field is sent as recorded.
///
/// Thread-safety: the queues are guarded by a lock; `start()` and `stop()` are called once each, in order.
public final class ReplayUpstream: Sendable {
    private let server: HTTPServer

    /// Serves `exchanges` (those with a recorded body; others are skipped).
    public init(exchanges: [RecordedExchange]) {
        var queues: [String: [HTTPServerResponse]] = [:]
        for exchange in exchanges {
            guard let body = exchange.body.bytes else { continue }
            queues[Self.key(exchange.method, exchange.pathAndQuery), default: []].append(Self.response(exchange, body: body))
        }
        let state = Queues(queues)
        var configuration = ServerConfiguration()
        configuration.listenAddresses = [(host: "127.0.0.1", port: 0)]
        configuration.eventLoopCount = 1
        configuration.serverName = nil
        configuration.limits.maxBodyBytes = 64 << 20
        var quiet = Logger(label: "dcserve.estimate.replay")
        quiet.logLevel = .critical
        let handler = ClosureHandler { request, respond in
            let key = Self.key(request.head.method.rawValue, request.head.path ?? "/")
            if let response = state.next(key) { return respond(response) }
            var fields = HTTPFields()
            fields[HTTPField.Name("DCServe-Replay")!] = "not-recorded"
            respond(.text(.notFound, "not recorded: \(key)", headerFields: fields))
        }
        server = HTTPServer(configuration: configuration, handler: handler, accessLog: AccessLog(logger: quiet))
    }

    /// Opens the listener; throws when no port can be bound.
    public func start() throws { try server.start() }

    /// `http://127.0.0.1:PORT` once started.
    public var baseURL: String { "http://127.0.0.1:\(server.boundEndpoints.first?.port ?? 0)" }

    /// Closes the listener and its connections.
    public func stop() {
        let done = DispatchSemaphore(value: 0)
        server.shutdown(deadline: .seconds(1)) { _ in done.signal() }
        done.wait()
    }

    static func key(_ method: String, _ target: String) -> String { method.uppercased() + " " + target }

    /// Fields of a recorded response that describe the recording's transfer, not the resource.
    static let droppedFields: Set<String> = [
        "content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive", "proxy-connection",
        "te", "trailer", "upgrade",
    ]

    static func response(_ exchange: RecordedExchange, body: [UInt8]) -> HTTPServerResponse {
        var fields = HTTPFields()
        for (name, value) in exchange.responseFields where !name.hasPrefix(":") && !droppedFields.contains(name.lowercased()) {
            guard let fieldName = HTTPField.Name(name) else { continue }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        let status = HTTPResponse.Status(code: exchange.status, reasonPhrase: exchange.statusText.isEmpty ? "Recorded" : exchange.statusText)
        return HTTPServerResponse(status: status, headerFields: fields, body: .bytes(body))
    }

    /// The response queues, one lock around them.
    private final class Queues: Sendable {
        private struct State {
            var queues: [String: [HTTPServerResponse]]
            var positions: [String: Int] = [:]
        }
        private let state: Locked<State>

        init(_ queues: [String: [HTTPServerResponse]]) { state = Locked(State(queues: queues)) }

        func next(_ key: String) -> HTTPServerResponse? {
            state.withLock { s in
                guard let queue = s.queues[key], !queue.isEmpty else { return nil }
                let position = s.positions[key, default: 0]
                s.positions[key] = position + 1
                return queue[min(position, queue.count - 1)]
            }
        }
    }
}
