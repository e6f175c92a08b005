import HTTPTypes

/// A response as handlers produce it: the head as an `HTTPResponse` and a body.
///
/// The server adds `Date`, `Server`, `Content-Length` / `Transfer-Encoding` and `Connection` itself;
/// handlers should not set those. Value type, `Sendable`.
public struct HTTPServerResponse: Sendable {
    /// The head. For a response made from a ``ForwardedResponseHead`` it is built on every read:
    /// code on the request path reads ``statusCode``, ``headerValue(_:)`` and friends instead, which
    /// answer from either form. Setting it (or changing it in place) replaces a forwarded or prepared head.
    public var head: HTTPResponse {
        get { forwarded?.response ?? built }
        set {
            built = newValue
            forwarded = nil
            prepared = nil
        }
        // In place (`response.head.headerFields[x] = y`): the fields' storage is changed where it is,
        // not copied out, copied again on write (every field) and stored back.
        _modify {
            if let forwarded {
                built = forwarded.response
                self.forwarded = nil
            }
            prepared = nil
            yield &built
        }
    }
    /// The head when it is not forwarded (a placeholder while it is).
    private var built: HTTPResponse
    public var body: ResponseBody
    /// `head` serialised beforehand, when the response was made from a ``PreparedHead`` and its head
    /// has not changed since (any change to `head` clears it).
    public private(set) var prepared: PreparedHead?
    /// The head as received from another server with this server's edits, written from its received
    /// bytes, when the response was made from one and `head` has not been set since.
    public private(set) var forwarded: ForwardedResponseHead?
    /// True when the handler guarantees that its responses are content-addressed: the same request
    /// path and the same strong `ETag` always come with the same body bytes, whoever asks and under
    /// whichever authority (static files: the ETag is derived from the file). Middleware may then
    /// reuse work keyed by (path, ETag). False (the default) for anything else — proxied and
    /// per-user responses — where such shortcuts could hand one client another's bytes.
    public var isContentAddressed = false
    /// For an answer to HEAD: the length to announce. Ignored for any other method (the body's length
    /// is what is sent).
    public var headLength = HeadResponseLength.body
    /// Extra text for this response's access-log line (e.g. dcserve's `decision=dcz@…`), appended
    /// after the connection id; never sent. It is only written when the access log is enabled. Set by
    /// middleware; nil = nothing appended.
    public var accessLogNote: (any AccessLogNote)?
    /// Called once this response's last byte is queued for sending (when the access log records it),
    /// with the bytes the access log counts and the nanoseconds since the request was parsed (its time
    /// to last byte), on the connection's queue: keep it short. Not called for a response the
    /// connection could not finish. Set by middleware; nil = nothing.
    public var onComplete: (@Sendable (_ bytes: Int64, _ nanoseconds: UInt64) -> Void)?
    /// For a `101 Switching Protocols` answer: takes the connection over once the head is queued. The
    /// server writes the head with `Connection: upgrade` (the handler sets `Upgrade`), leaves the
    /// connection's socket to this closure as a ``DetachedConnection`` (called on the connection's
    /// event loop queue; it owns the socket from then on) and serves no further request on it.
    /// Only an HTTP/1.1 request whose body is complete can switch; a `101` without this closure, or
    /// for a request that cannot switch, is replaced by a 502. Middleware that rebuilds a response
    /// must carry it over (it is part of the response, like the body).
    public var switchProtocols: (@Sendable (DetachedConnection) -> Void)?

    public init(head: HTTPResponse, body: ResponseBody = .empty) {
        self.built = head
        self.body = body
    }

    /// A response whose head is `prepared.head`, sent with `prepared`'s bytes while it is unchanged.
    public init(prepared: PreparedHead, body: ResponseBody) {
        self.built = prepared.head
        self.body = body
        self.prepared = prepared
    }

    /// A response whose head is `forwarded`, sent from its received bytes while it is unchanged.
    public init(forwarded: ForwardedResponseHead, body: ResponseBody = .empty) {
        self.built = Self.placeholder
        self.body = body
        self.forwarded = forwarded
    }
    private static let placeholder = HTTPResponse(status: .ok)

    /// The status code, without building a forwarded head.
    public var statusCode: Int { forwarded?.statusCode ?? built.status.code }

    /// `head.headerFields[name]` (several lines joined), without building a forwarded head.
    public func headerValue(_ name: HTTPField.Name) -> String? {
        if let forwarded { return forwarded.value(name) }
        // The usual single line without the subscript's joining machinery.
        var found: String?
        for field in built.headerFields where field.name == name {
            if found != nil { return built.headerFields[name] }
            found = field.value
        }
        return found
    }

    /// `head.headerFields[values: name]`, without building a forwarded head.
    public func headerValues(_ name: HTTPField.Name) -> [String] {
        if let forwarded { return forwarded.values(name) }
        return built.headerFields[values: name]
    }

    /// Whether the head has a field named `name`, without building a forwarded head.
    public func hasHeader(_ name: HTTPField.Name) -> Bool {
        if let forwarded { return forwarded.contains(name) }
        return built.headerFields.contains(name)
    }

    /// Builds a forwarded head into `head` once, for code that reads and edits it field by field (each
    /// read of `head` would build it anew). Nothing for any other head.
    public mutating func materializeHead() {
        if let forwarded { head = forwarded.response }
    }

    /// Appends `field` to the head (a forwarded head stays forwarded; a prepared one is detached).
    public mutating func appendHeader(_ field: HTTPField) {
        if forwarded != nil {
            forwarded!.append(field)
        } else {
            built.headerFields.append(field)
            prepared = nil
        }
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
