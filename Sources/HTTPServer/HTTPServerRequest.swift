import HTTPTypes
import HTTPCore

/// A request as handlers see it: the head as an `HTTPRequest`, the complete (de-chunked) body, and
/// where it came from. Value type, `Sendable`.
///
/// Its properties live in one copy-on-write box: a copy (a closure capturing the request, a
/// middleware passing it on) is one reference, not one per field; a change to a copy copies the box
/// first.
public struct HTTPServerRequest: Sendable {
    /// The box. Mutated only while uniquely referenced (``storage`` is copied first otherwise), so a
    /// box shared by copies is never written: hence `@unchecked Sendable`.
    private final class Storage: @unchecked Sendable {
        var head: HTTPRequest
        var method: HTTPRequest.Method
        var pathWithoutQuery: Substring
        var received: ReceivedRequestHead?
        var body: [UInt8]
        var version: HTTPVersion
        var remoteAddress: String
        var remoteHost: String
        var connectionID: UInt64
        var sequenceNumber: Int
        var receivedSequence: UInt64
        var eventLoop: EventLoop?
        var bodyStream: RequestBodyStream?
        var interim: InterimResponseSender?
        var fromTrustedProxy = false
        /// The connection the request came from, which takes its response (`answer`); set by the
        /// connection on the box it made, never carried into a copied box.
        var connection: Connection?

        init(head: HTTPRequest, method: HTTPRequest.Method?, body: [UInt8], version: HTTPVersion, remoteAddress: String,
             remoteHost: String, connectionID: UInt64, sequenceNumber: Int, receivedSequence: UInt64, eventLoop: EventLoop?,
             bodyStream: RequestBodyStream?) {
            self.head = head
            self.method = method ?? head.method
            self.pathWithoutQuery = HTTPServerRequest.pathWithoutQuery(of: head)
            self.body = body
            self.version = version
            self.remoteAddress = remoteAddress
            self.remoteHost = remoteHost
            self.connectionID = connectionID
            self.sequenceNumber = sequenceNumber
            self.receivedSequence = receivedSequence
            self.eventLoop = eventLoop
            self.bodyStream = bodyStream
        }

        init(copying other: Storage) {
            head = other.head
            method = other.method
            pathWithoutQuery = other.pathWithoutQuery
            received = other.received
            body = other.body
            version = other.version
            remoteAddress = other.remoteAddress
            remoteHost = other.remoteHost
            connectionID = other.connectionID
            sequenceNumber = other.sequenceNumber
            receivedSequence = other.receivedSequence
            eventLoop = other.eventLoop
            bodyStream = other.bodyStream
            interim = other.interim
            fromTrustedProxy = other.fromTrustedProxy
        }

        /// What is derived from `head`, after a change to it.
        func headChanged() {
            pathWithoutQuery = HTTPServerRequest.pathWithoutQuery(of: head)
            method = head.method
            received = nil
        }
    }

    private var storage: Storage

    private mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&storage) { storage = Storage(copying: storage) }
    }

    /// Method, scheme/authority/path (path = the request target as received), header fields in order.
    public var head: HTTPRequest {
        _read { yield storage.head }
        _modify {
            makeUnique()
            yield &storage.head
            storage.headChanged()
        }
    }
    /// `head.method`, kept with `head` (`HTTPRequest.method` makes the value anew from its pseudo
    /// field at every read).
    public var method: HTTPRequest.Method { storage.method }
    /// The head as the parser read it, while `head` is the one made from it (any change to `head`
    /// clears it); nil for requests not read from a socket.
    public internal(set) var received: ReceivedRequestHead? {
        _read { yield storage.received }
        set { makeUnique(); storage.received = newValue }
    }
    /// The complete request body (bodies are limited by `ServerConfiguration.limits.maxBodyBytes`).
    public var body: [UInt8] {
        _read { yield storage.body }
        _modify { makeUnique(); yield &storage.body }
    }
    /// HTTP version of the request line.
    public var version: HTTPVersion {
        get { storage.version }
        set { makeUnique(); storage.version = newValue }
    }
    /// Peer address, e.g. "127.0.0.1:53122" or "[::1]:53122".
    public var remoteAddress: String {
        _read { yield storage.remoteAddress }
        set { makeUnique(); storage.remoteAddress = newValue }
    }
    /// The host part of `remoteAddress` (`127.0.0.1`, `::1`), made once per connection.
    public var remoteHost: String {
        _read { yield storage.remoteHost }
        set { makeUnique(); storage.remoteHost = newValue }
    }
    /// Server-unique id of the connection the request arrived on (also in the access log).
    public var connectionID: UInt64 {
        get { storage.connectionID }
        set { makeUnique(); storage.connectionID = newValue }
    }
    /// Position of this request on its connection, starting at 1.
    public var sequenceNumber: Int {
        get { storage.sequenceNumber }
        set { makeUnique(); storage.sequenceNumber = newValue }
    }
    /// `InputSequence` number of the last socket read before this request was dispatched (its bytes
    /// had all been read by then); 0 when unknown (a request not read from a socket).
    public var receivedSequence: UInt64 {
        get { storage.receivedSequence }
        set { makeUnique(); storage.receivedSequence = newValue }
    }
    /// The event loop the request arrived on (nil when it did not come from a socket). A handler
    /// that does I/O for the request (an upstream exchange) does it on this loop: no thread hop, and
    /// its callbacks run on `eventLoop.queue`, the connection's own queue.
    public var eventLoop: EventLoop? {
        _read { yield storage.eventLoop }
        set { makeUnique(); storage.eventLoop = newValue }
    }
    /// The body as a stream, for requests the server was told to stream
    /// (`ServerConfiguration.streamsRequestBody`) that have a body; `body` is then empty. Nil otherwise.
    public var bodyStream: RequestBodyStream? {
        _read { yield storage.bodyStream }
        set { makeUnique(); storage.bodyStream = newValue }
    }
    /// Sends interim (1xx) responses ahead of the final one (e.g. a proxied `103 Early Hints`); nil
    /// for HTTP/1.0 clients (which must not receive 1xx) and requests not read from a socket.
    public var interim: InterimResponseSender? {
        _read { yield storage.interim }
        set { makeUnique(); storage.interim = newValue }
    }
    /// The peer is one of the server's trusted proxies (`ServerConfiguration.trustedProxies`): its
    /// forwarding fields (`Forwarded`, `X-Forwarded-*`, `X-Real-IP`) describe the real client.
    public var fromTrustedProxy: Bool {
        get { storage.fromTrustedProxy }
        set { makeUnique(); storage.fromTrustedProxy = newValue }
    }

    public init(head: HTTPRequest, body: [UInt8] = [], version: HTTPVersion = .http1_1,
                remoteAddress: String = "", connectionID: UInt64 = 0, sequenceNumber: Int = 1,
                receivedSequence: UInt64 = 0, eventLoop: EventLoop? = nil, bodyStream: RequestBodyStream? = nil,
                remoteHost: String? = nil) {
        self.init(head: head, method: nil, body: body, version: version, remoteAddress: remoteAddress, connectionID: connectionID,
                  sequenceNumber: sequenceNumber, receivedSequence: receivedSequence, eventLoop: eventLoop,
                  bodyStream: bodyStream, remoteHost: remoteHost)
    }

    /// `method`: `head.method` when the caller has it already.
    init(head: HTTPRequest, method: HTTPRequest.Method?, body: [UInt8], version: HTTPVersion, remoteAddress: String,
         connectionID: UInt64, sequenceNumber: Int, receivedSequence: UInt64, eventLoop: EventLoop?,
         bodyStream: RequestBodyStream?, remoteHost: String?) {
        storage = Storage(head: head, method: method, body: body, version: version, remoteAddress: remoteAddress,
                          remoteHost: remoteHost ?? Self.host(ofPeerAddress: remoteAddress), connectionID: connectionID,
                          sequenceNumber: sequenceNumber, receivedSequence: receivedSequence, eventLoop: eventLoop,
                          bodyStream: bodyStream)
    }

    /// The request target's path without the query (`/a/b?x=1` → `/a/b`). Kept up to date with `head`
    /// (computed once per request, not by every middleware that asks).
    public var pathWithoutQuery: Substring { storage.pathWithoutQuery }

    /// Names `connection` as the one that takes this request's response (`answer`). On a request the
    /// connection just made (its box is not shared yet).
    mutating func answeredBy(_ connection: Connection) {
        makeUnique()
        storage.connection = connection
    }

    /// Hands `response` to the connection the request came from, as request number `sequenceNumber`
    /// there (the server's `respond`: it captures only the request).
    func answer(_ response: consuming HTTPServerResponse) {
        storage.connection?.take(response, sequence: storage.sequenceNumber)
    }

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

    fileprivate static func pathWithoutQuery(of head: HTTPRequest) -> Substring {
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
