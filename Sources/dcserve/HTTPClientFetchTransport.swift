import DictionaryClient
import Dispatch
import Foundation
import HTTPClient
import HTTPCore
import HTTPTypes
import Locking

/// `dcserve fetch`'s default transport: the adapter from ``DictionaryClient`` to dcserve's own
/// event-loop `HTTPClient` (HTTP and HTTPS; TLS verified against `caFile` or the system store).
///
/// One exchange per call on a private one-loop group, the caller blocked until the response is complete
/// (a command-line tool has nothing else to do). The body goes to the sink as received — content codings
/// intact, chunked framing removed — one piece at a time: the next piece is read from the socket only
/// after the sink returned (back-pressure), so memory stays bounded whatever the body's size. Not for
/// concurrent use by several threads (a value used by one command).
struct HTTPClientFetchTransport: FetchTransport {
    var caFile: String?
    var timeoutSeconds = 30

    func get(_ target: ClientRequestTarget, fields: HTTPFields, sink: any FetchResponseSink) throws {
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
        let group = EventLoopGroup(count: 1, sweepInterval: .milliseconds(100))
        let client = HTTPClient(configuration: configuration, loops: group)
        var head = HTTPRequest(method: .get, scheme: target.scheme, authority: target.authority, path: target.pathAndQuery)
        head.headerFields = fields
        let relay = ResponseRelay(sink: sink)
        let exchange = client.execute(HTTPClientRequest(head: head), on: nil, delegate: relay)
        // The client enforces connect/send/read timeouts between pieces; this outer bound, reset by
        // every piece received, only guards against a bug.
        let bound = 4 * timeoutSeconds + 10
        while relay.done.wait(timeout: .now() + .seconds(bound)) == .timedOut {
            guard relay.takeProgress() else {
                exchange.cancel()
                throw CLIError("\(target): no progress within \(bound) s")
            }
        }
        if relay.failure != nil { exchange.cancel() }  // the sink refused a piece: close the connection
        client.closeIdleConnections()
        switch relay.failure {
        case nil: return
        case .sink(let error)?: throw error
        case .client(let error)?:
            if case .connectFailed(_, let code) = error, code == EPROTO {
                throw CLIError("\(target): TLS handshake failed (certificate verification or protocol error)")
            }
            throw CLIError("\(target): \(error)")
        }
    }
}

/// Passes one response from the client's delegate callbacks to a ``FetchResponseSink``. Delegate
/// methods run on the exchange's loop queue, serially, so the sink is called by one thread at a time;
/// `failure` is read only after `done` was signalled (which orders the accesses), and `progress` is
/// guarded by a lock, so `@unchecked Sendable` is sound.
private final class ResponseRelay: HTTPClientResponseDelegate, @unchecked Sendable {
    enum Failure {
        case client(HTTPClientError)
        case sink(any Error)
    }

    let sink: any FetchResponseSink
    let done = DispatchSemaphore(value: 0)
    private(set) var failure: Failure?
    private var finished = false
    private let progress = ProgressFlag()

    init(sink: any FetchResponseSink) { self.sink = sink }

    /// Whether a piece arrived since the last call.
    func takeProgress() -> Bool { progress.take() }

    func didReceiveHead(_ head: HTTPResponse, bodyLength: HTTPBodyLength) {
        guard !finished else { return }
        progress.bump()
        do { try sink.receiveHead(status: head.status.code, reason: head.status.reasonPhrase, fields: head.headerFields) }
        catch { finish(.sink(error)) }
    }

    func didReceiveBodyPart(_ bytes: ArraySlice<UInt8>, resume: @escaping @Sendable () -> Void) {
        guard !finished else { return }  // no resume: nothing more is read; the caller cancels
        progress.bump()
        do { try bytes.withUnsafeBytes { try sink.receiveBody($0) } }
        catch { return finish(.sink(error)) }
        resume()
    }

    func didFinish(trailers: HTTPFields?) { finish(nil) }

    func didFail(_ error: HTTPClientError) { finish(.client(error)) }

    private func finish(_ failure: Failure?) {
        guard !finished else { return }
        finished = true
        self.failure = failure
        done.signal()
    }
}

/// A flag set by the loop and taken by the waiting thread. Thread-safe.
private final class ProgressFlag: Sendable {
    private let value = Locked(false)
    func bump() { value.withLock { $0 = true } }
    func take() -> Bool {
        value.withLock { v in
            defer { v = false }
            return v
        }
    }
}
