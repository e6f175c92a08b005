import HTTPTypes
import HTTPCore

/// A request as handlers see it: the head as an `HTTPRequest`, the complete (de-chunked) body, and
/// where it came from. Value type, `Sendable`.
public struct HTTPServerRequest: Sendable {
    /// Method, scheme/authority/path (path = the request target as received), header fields in order.
    public var head: HTTPRequest {
        didSet {
            pathWithoutQuery = Self.pathWithoutQuery(of: head)
            received = nil
        }
    }
    /// The head as the parser read it, while `head` is the one made from it (any change to `head`
    /// clears it); nil for requests not read from a socket.
    public internal(set) var received: ReceivedRequestHead?
    /// The complete request body (bodies are limited by `ServerConfiguration.limits.maxBodyBytes`).
    public var body: [UInt8]
    /// HTTP version of the request line.
    public var version: HTTPVersion
    /// Peer address, e.g. "127.0.0.1:53122" or "[::1]:53122".
    public var remoteAddress: String
    /// The host part of `remoteAddress` (`127.0.0.1`, `::1`), made once per connection.
    public var remoteHost: String
    /// Server-unique id of the connection the request arrived on (also in the access log).
    public var connectionID: UInt64
    /// Position of this request on its connection, starting at 1.
    public var sequenceNumber: Int
    /// `InputSequence` number of the last socket read before this request was dispatched (its bytes
    /// had all been read by then); 0 when unknown (a request not read from a socket).
    public var receivedSequence: UInt64
    /// The event loop the request arrived on (nil when it did not come from a socket). A handler
    /// that does I/O for the request (an upstream exchange) does it on this loop: no thread hop, and
    /// its callbacks run on `eventLoop.queue`, the connection's own queue.
    public var eventLoop: EventLoop?
    /// The body as a stream, for requests the server was told to stream
    /// (`ServerConfiguration.streamsRequestBody`) that have a body; `body` is then empty. Nil otherwise.
    public var bodyStream: RequestBodyStream?
    /// Sends interim (1xx) responses ahead of the final one (e.g. a proxied `103 Early Hints`); nil
    /// for HTTP/1.0 clients (which must not receive 1xx) and requests not read from a socket.
    public var interim: InterimResponseSender?
    /// The peer is one of the server's trusted proxies (`ServerConfiguration.trustedProxies`): its
    /// forwarding fields (`Forwarded`, `X-Forwarded-*`, `X-Real-IP`) describe the real client.
    public var fromTrustedProxy = false

    public init(head: HTTPRequest, body: [UInt8] = [], version: HTTPVersion = .http1_1,
                remoteAddress: String = "", connectionID: UInt64 = 0, sequenceNumber: Int = 1,
                receivedSequence: UInt64 = 0, eventLoop: EventLoop? = nil, bodyStream: RequestBodyStream? = nil,
                remoteHost: String? = nil) {
        self.head = head
        self.pathWithoutQuery = Self.pathWithoutQuery(of: head)
        self.body = body
        self.version = version
        self.remoteAddress = remoteAddress
        self.remoteHost = remoteHost ?? Self.host(ofPeerAddress: remoteAddress)
        self.connectionID = connectionID
        self.sequenceNumber = sequenceNumber
        self.receivedSequence = receivedSequence
        self.eventLoop = eventLoop
        self.bodyStream = bodyStream
    }

    /// The request target's path without the query (`/a/b?x=1` → `/a/b`). Kept up to date with `head`
    /// (computed once per request, not by every middleware that asks).
    public private(set) var pathWithoutQuery: Substring

    /// The host part of a peer address: `1.2.3.4:5` → `1.2.3.4`, `[::1]:5` → `::1`; an address
    /// without a port (several colons and no brackets, or none) as it is.
    public static func host(ofPeerAddress address: String) -> String {
        // On the UTF-8 view: a search by Character would segment graphemes.
        let u = address.utf8
        if u.first == UInt8(ascii: "["), let close = u.firstIndex(of: UInt8(ascii: "]")) {
            return String(address[u.index(after: u.startIndex)..<close])
        }
        if let colon = u.lastIndex(of: UInt8(ascii: ":")), u.firstIndex(of: UInt8(ascii: ":")) == colon {
            return String(address[..<colon])
        }
        return address
    }

    private static func pathWithoutQuery(of head: HTTPRequest) -> Substring {
        let path = head.path ?? "/"
        // Scanning bytes, not Characters: no grapheme breaking on every request ("?" and "#" are ASCII,
        // so a byte index is a valid String index).
        if let q = path.utf8.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) { return path[..<q] }
        return path[...]
    }
}

extension ParsedRequest {
    /// Converts the parser's output into the handler currency. The method is a validated token and
    /// names are validated tokens, so the HTTPTypes initialisers cannot fail here. Common methods and
    /// names come prebuilt (`CommonFieldNames`). A value that is all ASCII becomes a String directly
    /// (the parser refused CTLs, so it is a legal value as it is); one with obs-text bytes is passed
    /// as bytes (the lenient form keeps them as they are). `scheme` decides the scheme from the
    /// header fields (it replaces one an absolute-form target names).
    func makeHTTPRequest(scheme: (HTTPFields) -> String) -> HTTPRequest {
        var fields = HTTPFields()
        fields.reserveCapacity(fieldCount)
        var authority: String?
        let method = headBytes.withUnsafeBufferPointer { head in
            for (nameRange, valueRange) in fieldRanges {
                let nameBytes = UnsafeBufferPointer(rebasing: head[nameRange])
                guard let name = CommonFieldNames.name(nameBytes)
                        ?? HTTPField.Name(String(decoding: nameBytes, as: UTF8.self)) else { continue }
                let field = HTTPField(name: name, receivedValue: UnsafeBufferPointer(rebasing: head[valueRange]))
                if authority == nil && name == hostFieldName { authority = field.value }
                fields.append(field)
            }
            let methodBytes = UnsafeBufferPointer(rebasing: head[methodRange])
            return CommonFieldNames.method(methodBytes)
                ?? HTTPRequest.Method(String(decoding: methodBytes, as: UTF8.self)) ?? .get
        }
        var path = target
        switch targetForm {
        case .origin, .asterisk:
            break
        case .absolute:
            // http://authority/path?query → path "/path?query"; authority from the target wins (RFC 9112 §3.2.2).
            let separator = path.firstRange(of: "://")
            let afterScheme = separator.map { path[$0.upperBound...] } ?? path[...]
            if let slash = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" }) {
                authority = String(afterScheme[..<slash])
                path = afterScheme[slash] == "/" ? String(afterScheme[slash...]) : "/" + afterScheme[slash...]
            } else {
                authority = String(afterScheme)
                // An empty path and no query: the server itself for OPTIONS (RFC 9112 §3.2.4), as `*`.
                path = method == .options ? "*" : "/"
            }
        }
        return HTTPRequest(method: method, scheme: scheme(fields), authority: authority, path: path, headerFields: fields)
    }
}

private let hostFieldName = HTTPField.Name("host")!
