import HTTPTypes

/// Sends one HTTP request and returns the whole response as received: the seam between
/// ``DictionaryHTTPSession`` and an HTTP stack (AsyncHTTPClient, URLSession, a test's socket client).
///
/// Contract: send `Accept-Encoding` exactly as given and return the body with its content codings
/// intact (transfer coding removed) — a transport that decodes a coding itself must also remove that
/// token from `Content-Encoding` in the fields it returns; return the fields as received, several lines
/// of one field kept; follow no redirects (a 3xx is returned as is, so dictionaries are registered
/// under the URL that was asked for). Implementations must be thread-safe.
public protocol DictionaryHTTPTransport: Sendable {
    /// `request.scheme`, `authority` and `path` are set. `body` is nil for a request without one.
    func send(_ request: HTTPRequest, body: [UInt8]?) async throws -> ClientResponse
}

extension HTTPRequest {
    /// `scheme://authority/path`, the URL a ``DictionaryClient`` works with; nil when a part is missing.
    public var absoluteURLString: String? {
        guard let scheme, let authority, let path else { return nil }
        return scheme + "://" + authority + path
    }
}
