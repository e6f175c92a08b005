import HTTPTypes

/// A response as handlers produce it: the head as an `HTTPResponse` and a body.
///
/// The server adds `Date`, `Server`, `Content-Length` / `Transfer-Encoding` and `Connection` itself;
/// handlers should not set those. Value type, `Sendable`.
public struct HTTPServerResponse: Sendable {
    public var head: HTTPResponse
    public var body: ResponseBody

    public init(head: HTTPResponse, body: ResponseBody = .empty) {
        self.head = head
        self.body = body
    }

    public init(status: HTTPResponse.Status, headerFields: HTTPFields = [:], body: ResponseBody = .empty) {
        self.init(head: HTTPResponse(status: status, headerFields: headerFields), body: body)
    }

    /// A short plain-text response, e.g. for errors: `text` plus a newline as the body.
    public static func text(_ status: HTTPResponse.Status, _ text: String, headerFields: HTTPFields = [:]) -> HTTPServerResponse {
        var fields = headerFields
        fields[.contentType] = "text/plain; charset=utf-8"
        return HTTPServerResponse(status: status, headerFields: fields, body: .bytes(Array((text + "\n").utf8)))
    }
}
