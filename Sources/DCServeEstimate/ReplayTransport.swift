import Dispatch
import Foundation
import HTTPClient
import HTTPCore
import HTTPTypes

/// Sends one request at a time to a loopback server with dcserve's own `HTTPClient` and waits for
/// the whole response: the replay's client side. Keeps connections alive between requests.
///
/// Thread-safety: `send` blocks its caller and may be called from one thread at a time; not for use
/// on an event loop.
final class ReplayTransport: Sendable {
    /// One complete response: the head's bytes as received, the body as on the wire (content codings
    /// intact, chunked framing removed).
    struct Response: Sendable {
        var status: Int
        var fields: HTTPFields
        var headByteCount: Int
        var body: [UInt8]
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private let client: HTTPClient
    private let group: EventLoopGroup
    private let authority: String

    init(port: Int) {
        group = EventLoopGroup(count: 1, sweepInterval: .milliseconds(100))
        var configuration = HTTPClientConfiguration(servers: [UpstreamServer(host: "127.0.0.1", port: port, tls: false)])
        configuration.connectTimeout = .seconds(10)
        configuration.sendTimeout = .seconds(60)
        configuration.readTimeout = .seconds(120)
        client = HTTPClient(configuration: configuration, loops: group)
        authority = "127.0.0.1:\(port)"
    }

    func send(method: String, pathAndQuery: String, fields: HTTPFields, body: [UInt8]) throws(Failure) -> Response {
        var head = HTTPRequest(method: HTTPRequest.Method(method) ?? .get, scheme: "http", authority: authority, path: pathAndQuery)
        head.headerFields = fields
        let collector = Collector()
        let exchange = client.execute(HTTPClientRequest(head: head, body: body.isEmpty ? .none : .bytes(body)), on: nil, delegate: collector)
        guard collector.done.wait(timeout: .now() + .seconds(300)) == .success else {
            exchange.cancel()
            throw Failure(description: "\(method) \(pathAndQuery): no response within 300 s")
        }
        switch collector.outcome {
        case .success(let response)?: return response
        case .failure(let error)?: throw Failure(description: "\(method) \(pathAndQuery): \(error)")
        case nil: throw Failure(description: "\(method) \(pathAndQuery): the exchange ended without a response")
        }
    }

    func close() { client.closeIdleConnections() }

    /// Collects one response. Delegate methods run serially on the exchange's loop queue; `outcome`
    /// is read only after `done` was signalled, which orders the accesses.
    private final class Collector: HTTPClientResponseDelegate, @unchecked Sendable {
        let done = DispatchSemaphore(value: 0)
        private var parsed: ParsedResponseHead?
        private var body: [UInt8] = []
        private(set) var outcome: Result<Response, HTTPClientError>?

        func didReceiveHead(parsed head: ParsedResponseHead) { parsed = head }
        func didReceiveHead(_ head: HTTPResponse, bodyLength: HTTPBodyLength) {}

        func didReceiveBodyPart(_ bytes: ArraySlice<UInt8>, resume: @escaping @Sendable () -> Void) {
            body.append(contentsOf: bytes)
            resume()
        }

        func didFinish(trailers: HTTPFields?) {
            guard let parsed else { return finish(.failure(.cancelled)) }
            let head = parsed.makeHTTPResponse()
            finish(.success(Response(status: parsed.status, fields: head.headerFields, headByteCount: parsed.headBytes.count, body: body)))
        }

        func didFail(_ error: HTTPClientError) { finish(.failure(error)) }

        private func finish(_ result: Result<Response, HTTPClientError>) {
            guard outcome == nil else { return }
            outcome = result
            done.signal()
        }
    }
}
