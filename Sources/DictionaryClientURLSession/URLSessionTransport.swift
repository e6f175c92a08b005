#if !canImport(FoundationNetworking)
import DictionaryClient
import DictionaryCodecTypes
import Foundation
import HTTPTypes
import HTTPTypesFoundation

/// ``DictionaryHTTPTransport`` over an inner `URLSession`: the transport of Apple platforms, where
/// URLSession hands an unknown content coding (dcz, dcb, zstd) through untouched.
///
/// Only on Apple platforms: on Linux, FoundationNetworking always lets libcurl decode content codings
/// and fails a response whose coding libcurl does not know ("Unrecognized content encoding type"), so
/// a dcz body never arrives; give ``DictionaryURLSession`` another transport there (the
/// AsyncHTTPClient one).
///
/// The inner session is ephemeral (no cookies or cache of its own), follows no redirects, and is not
/// a background session (dictionary decoding needs the app in the foreground).
///
/// `platformCodings`: URLSession decodes gzip, deflate and br itself and keeps `Content-Encoding`
/// naming them. When true, the transport also offers those three in `Accept-Encoding` and removes them
/// from the `Content-Encoding` it returns (the body is already decoded; `wireBytes` then counts
/// decoded bytes). Off by default: the client offers only what its own decoders decode. Not checked on
/// this repository's Linux machines.
public final class URLSessionTransport: NSObject, DictionaryHTTPTransport, URLSessionTaskDelegate, Sendable {
    public static let platformDecodedCodings = ["gzip", "deflate", "br"]

    public let platformCodings: Bool
    private let session: URLSession

    public init(configuration: URLSessionConfiguration = .ephemeral, platformCodings: Bool = false) {
        self.platformCodings = platformCodings
        session = URLSession(configuration: configuration)
    }

    deinit { session.finishTasksAndInvalidate() }

    public func send(_ request: HTTPRequest, body: [UInt8]?) async throws -> ClientResponse {
        var request = request
        if platformCodings {
            let given = request.headerFields[.acceptEncoding] ?? ""
            request.headerFields[.acceptEncoding] = ([given].filter { !$0.isEmpty } + Self.platformDecodedCodings).joined(separator: ", ")
        }
        guard var urlRequest = URLRequest(httpRequest: request) else {
            throw DictionaryClientError.invalidURL(request.absoluteURLString ?? "\(request)")
        }
        urlRequest.httpBody = body.map { Data($0) }
        urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
        let (data, response) = try await session.data(for: urlRequest, delegate: self)
        guard let http = response as? HTTPURLResponse, var head = http.httpResponse else {
            throw URLError(.badServerResponse)
        }
        if platformCodings {
            var codings = ResponseBodyDecoder.codings(head.headerFields)
            while let last = codings.last, Self.platformDecodedCodings.contains(last) { codings.removeLast() }
            head.headerFields[.contentEncoding] = codings.isEmpty ? nil : codings.joined(separator: ", ")
        }
        return ClientResponse(status: head.status.code, fields: head.headerFields, body: [UInt8](data))
    }

    /// Follows no redirect: the 3xx is returned.
    public func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest
    ) async -> URLRequest? { nil }
}
#endif
