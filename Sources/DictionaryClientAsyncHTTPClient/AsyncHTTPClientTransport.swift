import AsyncHTTPClient
import DictionaryClient
import HTTPTypes
import NIOCore
import NIOHTTP1

/// ``DictionaryHTTPTransport`` over AsyncHTTPClient, for server-side Swift and Linux apps.
///
/// The `HTTPClient` must not decompress (`decompression: .disabled`, AsyncHTTPClient's default) and
/// should follow no redirects (``configuration``); ``init(eventLoopGroup:)`` makes such a client and
/// owns it (``shutdown()`` it when done). Bodies larger than `maxBodyBytes` fail the request.
/// Thread-safe.
public final class AsyncHTTPClientTransport: DictionaryHTTPTransport {
    public let httpClient: HTTPClient
    public let timeout: TimeAmount
    public let maxBodyBytes: Int
    private let ownsClient: Bool

    /// What the transport needs of an `HTTPClient`: no decompression, no redirects.
    public static var configuration: HTTPClient.Configuration {
        HTTPClient.Configuration(redirectConfiguration: .disallow, decompression: .disabled)
    }

    /// Uses `httpClient` (configured as ``configuration`` says); the caller shuts it down.
    public init(httpClient: HTTPClient, timeout: TimeAmount = .seconds(30), maxBodyBytes: Int = 256 << 20) {
        self.httpClient = httpClient
        self.timeout = timeout
        self.maxBodyBytes = maxBodyBytes
        ownsClient = false
    }

    /// Makes its own `HTTPClient` on `eventLoopGroup`; call ``shutdown()`` when done.
    public init(eventLoopGroup: any EventLoopGroup = HTTPClient.defaultEventLoopGroup,
                timeout: TimeAmount = .seconds(30), maxBodyBytes: Int = 256 << 20) {
        httpClient = HTTPClient(eventLoopGroup: eventLoopGroup, configuration: Self.configuration)
        self.timeout = timeout
        self.maxBodyBytes = maxBodyBytes
        ownsClient = true
    }

    /// Shuts down the `HTTPClient` this transport made (no-op for one it was given).
    public func shutdown() async throws {
        if ownsClient { try await httpClient.shutdown() }
    }

    public func send(_ request: HTTPRequest, body: [UInt8]?) async throws -> ClientResponse {
        guard let url = request.absoluteURLString else { throw DictionaryClientError.invalidURL("\(request)") }
        var outgoing = HTTPClientRequest(url: url)
        outgoing.method = NIOHTTP1.HTTPMethod(rawValue: request.method.rawValue)
        for field in request.headerFields { outgoing.headers.add(name: field.name.rawName, value: field.value) }
        if let body { outgoing.body = .bytes(body) }
        let response = try await httpClient.execute(outgoing, timeout: timeout)
        var fields = HTTPFields()
        for (name, value) in response.headers {
            guard let fieldName = HTTPField.Name(name) else { continue }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        let buffer = try await response.body.collect(upTo: maxBodyBytes)
        return ClientResponse(status: Int(response.status.code), fields: fields, body: Array(buffer.readableBytesView))
    }
}

extension DictionaryHTTPSession {
    /// GET (or `method`) `url` for `account` through the session: decorated, sent, decoded, registered.
    public func execute(
        _ url: String, method: HTTPRequest.Method = .get, fields: HTTPFields = HTTPFields(), body: [UInt8]? = nil,
        destination: String = "", account: String = ""
    ) async throws -> ProcessedResponse {
        guard let target = ClientRequestTarget(url: url) else { throw DictionaryClientError.invalidURL(url) }
        let request = HTTPRequest(method: method, scheme: target.scheme, authority: target.authority,
                                  path: target.pathAndQuery, headerFields: fields)
        return try await send(request, body: body, destination: destination, account: account)
    }
}
