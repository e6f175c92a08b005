import DictionaryClient
import Foundation
import HTTPTypes
import HTTPTypesFoundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// URLSession's shape for the dictionary client: ``data(for:)`` takes a `URLRequest` and returns
/// `(Data, URLResponse)` like `URLSession.data(for:)`, after decorating the request
/// (`Available-Dictionary`, `Accept-Encoding`), decoding the response and registering any dictionary
/// it carries (a `Link`-announced one is fetched in the background with the account's credentials).
///
/// The returned `HTTPURLResponse` describes the decoded body: no `Content-Encoding`, `Content-Length`
/// equal to the data's length. ``measurementHandler`` (and ``dataAndMeasurement(for:)``) report
/// what the exchange cost.
///
/// Thread-safety: `Sendable`; calls may run concurrently.
public final class DictionaryURLSession: Sendable {
    public let session: DictionaryHTTPSession
    /// The account (store partition) a request belongs to, e.g. from its `Authorization` or the
    /// signed-in user; "" when the app has no accounts.
    public let account: @Sendable (URLRequest) -> String
    /// Called once per processed response (on the caller's task), for the app's analytics.
    public let measurementHandler: (@Sendable (URLRequest, ResponseMeasurement) -> Void)?

    /// - Parameters:
    ///   - transport: how requests go out. On Apple platforms the default is ``URLSessionTransport``;
    ///     on Linux there is no default (FoundationNetworking cannot receive dcz; see
    ///     ``URLSessionTransport``): pass the AsyncHTTPClient transport.
    ///   - linkCredentials: fields (e.g. `Authorization`) for a `Link` dictionary fetch from an origin
    ///     for an account.
    public init(
        client: DictionaryClient, transport: any DictionaryHTTPTransport,
        account: @escaping @Sendable (URLRequest) -> String = { _ in "" },
        linkCredentials: @escaping DictionaryHTTPSession.LinkCredentials = { _, _ in HTTPFields() },
        measurementHandler: (@Sendable (URLRequest, ResponseMeasurement) -> Void)? = nil
    ) {
        session = DictionaryHTTPSession(client: client, transport: transport, linkCredentials: linkCredentials)
        self.account = account
        self.measurementHandler = measurementHandler
    }

    #if !canImport(FoundationNetworking)
    /// Over an inner `URLSession` (Apple platforms).
    public convenience init(
        client: DictionaryClient, configuration: URLSessionConfiguration = .ephemeral,
        account: @escaping @Sendable (URLRequest) -> String = { _ in "" },
        linkCredentials: @escaping DictionaryHTTPSession.LinkCredentials = { _, _ in HTTPFields() },
        measurementHandler: (@Sendable (URLRequest, ResponseMeasurement) -> Void)? = nil
    ) {
        self.init(client: client, transport: URLSessionTransport(configuration: configuration), account: account,
                  linkCredentials: linkCredentials, measurementHandler: measurementHandler)
    }
    #endif

    /// As `URLSession.data(for:)`. Throws `URLError(.unsupportedURL)` for a request URLSession could
    /// not express as an HTTP request, the transport's errors, and ``DictionaryClientError`` when the
    /// body cannot be decoded (the response is dropped, RFC 9842 §9.3).
    public func data(for request: URLRequest) async throws -> (Data, URLResponse) {
        let (data, response, _) = try await dataAndMeasurement(for: request)
        return (data, response)
    }

    /// ``data(for:)`` plus the response's measurement.
    public func dataAndMeasurement(for request: URLRequest) async throws -> (Data, HTTPURLResponse, ResponseMeasurement) {
        guard let url = request.url, var httpRequest = request.httpRequest else { throw URLError(.unsupportedURL) }
        httpRequest.headerFields[.contentLength] = nil
        let body = request.httpBody.map { [UInt8]($0) }
        let processed = try await session.send(httpRequest, body: body, account: account(request))
        var fields = processed.fields
        fields[.contentEncoding] = nil
        fields[.contentLength] = String(processed.body.count)
        fields[.transferEncoding] = nil
        let head = HTTPResponse(status: .init(code: processed.status), headerFields: fields)
        guard let response = HTTPURLResponse(httpResponse: head, url: url) else { throw URLError(.badServerResponse) }
        measurementHandler?(request, processed.measurement)
        return (Data(processed.body), response, processed.measurement)
    }

    /// Forgets `account`'s dictionaries (on logout).
    public func clear(account: String) throws {
        try session.client.clear(account: account)
    }
}
