import DictionaryClient
import Dispatch
import Foundation
import HTTPClient
import HTTPCore
import HTTPTypes

/// `dcserve fetch`'s default transport: the adapter from ``DictionaryClient`` to dcserve's own
/// event-loop `HTTPClient` (HTTP and HTTPS; TLS verified against `caFile` or the system store).
///
/// One exchange per call on a private one-loop group, the caller blocked until the response is complete
/// (a command-line tool has nothing else to do). The body is collected as received — content codings
/// intact, chunked framing removed — up to `maxResponseBytes`. Not for concurrent use by several
/// threads (a value used by one command).
struct HTTPClientFetchTransport: FetchTransport {
    var caFile: String?
    var timeoutSeconds = 30
    var maxResponseBytes = 512 << 20

    func get(_ target: ClientRequestTarget, fields: HTTPFields) throws -> FetchHTTPExchange.Response {
        let bareHost = target.host.hasPrefix("[") ? String(target.host.dropFirst().dropLast()) : target.host
        let server = UpstreamServer(host: bareHost, port: target.effectivePort, tls: target.scheme == "https")
        var configuration = HTTPClientConfiguration(servers: [server])
        configuration.connectTimeout = .seconds(timeoutSeconds)
        configuration.sendTimeout = .seconds(timeoutSeconds)
        configuration.readTimeout = .seconds(timeoutSeconds)
        configuration.maxIdleConnectionsPerLoop = 0
        if server.tls {
            let tls = TLSClientConfiguration(caFile: caFile)
            do { _ = try TLSClientContext(configuration: tls) }
            catch { throw CLIError("TLS: cannot use \(caFile ?? "the system CA store"): \(error)") }
            configuration.tls = tls
        }
        let group = EventLoopGroup(count: 1, sweepInterval: .milliseconds(100), linger: .zero)
        let client = HTTPClient(configuration: configuration, loops: group)
        var head = HTTPRequest(method: .get, scheme: target.scheme, authority: target.authority, path: target.pathAndQuery)
        head.headerFields = fields
        let collector = ResponseCollector(limit: maxResponseBytes)
        let exchange = client.execute(HTTPClientRequest(head: head), on: nil, delegate: collector)
        // The client enforces connect/send/read timeouts; this outer bound only guards against a bug.
        guard collector.done.wait(timeout: .now() + .seconds(4 * timeoutSeconds + 10)) == .success else {
            exchange.cancel()
            throw CLIError("\(target): no response within \(4 * timeoutSeconds + 10) s")
        }
        client.closeIdleConnections()
        switch collector.outcome {
        case .success(let response): return response
        case .failure(let error):
            if case .connectFailed(_, let code) = error, code == EPROTO {
                throw CLIError("\(target): TLS handshake failed (certificate verification or protocol error)")
            }
            throw CLIError("\(target): \(error)")
        case nil: throw CLIError("\(target): the exchange ended without a response")
        }
    }
}

/// Collects one response for ``HTTPClientFetchTransport``. Delegate methods run on the exchange's loop
/// queue, serially; `outcome` is read only after `done` was signalled (which orders the accesses), so
/// `@unchecked Sendable` is sound.
private final class ResponseCollector: HTTPClientResponseDelegate, @unchecked Sendable {
    let limit: Int
    let done = DispatchSemaphore(value: 0)
    private var head: HTTPResponse?
    private var body: [UInt8] = []
    private(set) var outcome: Result<FetchHTTPExchange.Response, HTTPClientError>?
    private var tooLarge = false

    init(limit: Int) { self.limit = limit }

    func didReceiveHead(_ head: HTTPResponse, bodyLength: HTTPBodyLength) { self.head = head }

    func didReceiveBodyPart(_ bytes: ArraySlice<UInt8>, resume: @escaping @Sendable () -> Void) {
        if body.count + bytes.count > limit {
            tooLarge = true
        } else {
            body.append(contentsOf: bytes)
        }
        resume()
    }

    func didFinish(trailers: HTTPFields?) {
        guard let head else { return finish(.failure(.cancelled)) }
        if tooLarge {
            return finish(.failure(.invalidResponse(server: UpstreamServer(host: "-", port: 0), reason: "response larger than \(limit) bytes")))
        }
        finish(.success(FetchHTTPExchange.Response(
            status: head.status.code, reason: head.status.reasonPhrase, fields: head.headerFields, body: body,
            bytesRead: body.count)))
    }

    func didFail(_ error: HTTPClientError) { finish(.failure(error)) }

    private func finish(_ result: Result<FetchHTTPExchange.Response, HTTPClientError>) {
        guard outcome == nil else { return }
        outcome = result
        done.signal()
    }
}
