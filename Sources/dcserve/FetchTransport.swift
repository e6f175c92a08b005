import DictionaryClient
import HTTPTypes

/// Receives one response as it arrives: ``receiveHead(status:reason:fields:)`` once (interim 1xx
/// responses are skipped), then the body in pieces as on the wire (content codings intact, chunked
/// framing removed). Called by one thread at a time, never concurrently; an error thrown here ends
/// the exchange (the connection is closed) and is rethrown by ``FetchTransport/get(_:fields:sink:)``.
protocol FetchResponseSink: AnyObject {
    func receiveHead(status: Int, reason: String, fields: HTTPFields) throws
    func receiveBody(_ bytes: UnsafeRawBufferPointer) throws
}

/// How `dcserve fetch` sends one GET and hands the response to a sink as it arrives, so a body of
/// any size passes through bounded memory. Errors are `CLIError`s naming the URL, or the sink's own.
protocol FetchTransport {
    func get(_ target: ClientRequestTarget, fields: HTTPFields, sink: any FetchResponseSink) throws
}

extension FetchTransport {
    /// The whole response in memory, its body up to `maxBodyBytes` (larger: a `CLIError` naming the
    /// URL). For small documents: lab plans and reports, training samples.
    func get(_ target: ClientRequestTarget, fields: HTTPFields, maxBodyBytes: Int = 64 << 20) throws -> FetchHTTPExchange.Response {
        let collector = FetchResponseCollector(target: target, limit: maxBodyBytes)
        try get(target, fields: fields, sink: collector)
        guard let response = collector.response else { throw CLIError("\(target): the exchange ended without a response") }
        return response
    }
}

/// A sink that keeps the response in memory, bounded. Not thread-safe (see ``FetchResponseSink``).
final class FetchResponseCollector: FetchResponseSink {
    let target: ClientRequestTarget
    let limit: Int
    private(set) var response: FetchHTTPExchange.Response?

    init(target: ClientRequestTarget, limit: Int) {
        self.target = target
        self.limit = limit
    }

    func receiveHead(status: Int, reason: String, fields: HTTPFields) throws {
        response = FetchHTTPExchange.Response(status: status, reason: reason, fields: fields, body: [])
    }

    func receiveBody(_ bytes: UnsafeRawBufferPointer) throws {
        guard response!.body.count + bytes.count <= limit else {
            throw CLIError("\(target): response body larger than \(limit) bytes")
        }
        response!.body.append(contentsOf: bytes)
    }
}
