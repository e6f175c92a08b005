import HTTPServer
import HTTPTypes

/// What the reverse proxy does with a request's method before forwarding it: every method is
/// forwarded (extension methods such as PROPFIND or QUERY included, the request target as received)
/// except these, which dcserve answers itself:
///
/// - `TRACE` unless the upstream's `forwardTrace` is set: 405, as nginx answers (a TRACE reflects the
///   request's fields, cookies included, back to whoever can make a browser send it).
/// - `TRACE` and `OPTIONS` with `Max-Forwards: 0` (RFC 9110 §7.6.2): dcserve is the final recipient.
///   OPTIONS gets 200 with `Allow`; TRACE (when forwarded at all) gets 200 `message/http` reflecting
///   the request head as dcserve received it, minus the fields that carry credentials (§9.3.8).
///   A larger `Max-Forwards` is decremented in the forwarded request; one that is not a single
///   1*DIGIT value is a 400. Other methods' `Max-Forwards` is forwarded unchanged.
///
/// Pure; thread-safe.
enum ProxyMethodRules {
    enum Decision {
        /// Forward; when `maxForwards` is set, the upstream request carries it as `Max-Forwards`.
        case forward(maxForwards: Int?)
        /// Answer the client with this response; nothing goes upstream.
        case respond(HTTPServerResponse)
    }

    /// The `Allow` dcserve states for a proxied resource: the methods it forwards by name (any other
    /// token is forwarded too, but cannot be listed).
    static func allow(forwardTrace: Bool) -> String {
        forwardTrace ? "GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH, TRACE" : "GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH"
    }

    /// Fields a TRACE reflection leaves out: they carry credentials.
    static let sensitiveFields: [HTTPField.Name] = [.cookie, .authorization, .proxyAuthorization]

    static func decide(_ request: HTTPServerRequest, forwardTrace: Bool) -> Decision {
        let method = request.method
        let isTrace = method == .trace
        if isTrace && !forwardTrace {
            return .respond(.text(.methodNotAllowed, "405 Method Not Allowed: TRACE is not forwarded",
                                  headerFields: [.allow: allow(forwardTrace: false)]))
        }
        guard isTrace || method == .options else { return .forward(maxForwards: nil) }
        let values = request.head.headerFields[values: .maxForwards]
        guard !values.isEmpty else { return .forward(maxForwards: nil) }
        guard values.count == 1, let remaining = parse(values[0]) else {
            return .respond(.text(.badRequest, "400 Bad Request: Max-Forwards must be one decimal number"))
        }
        guard remaining == 0 else { return .forward(maxForwards: remaining - 1) }
        if isTrace { return .respond(reflection(of: request)) }
        return .respond(HTTPServerResponse(status: .ok, headerFields: [.allow: allow(forwardTrace: forwardTrace)],
                                           body: .bytes([])))
    }

    /// `1*DIGIT`; a value beyond `Int` saturates (it is decremented, never multiplied).
    static func parse(_ value: String) -> Int? {
        guard !value.isEmpty else { return nil }
        var n = 0
        for b in value.utf8 {
            guard b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") else { return nil }
            let (m, o1) = n.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(Int(b - UInt8(ascii: "0")))
            n = o1 || o2 ? Int.max : s
        }
        return n
    }

    /// A TRACE's answer from its final recipient: the request head as received, as `message/http`.
    static func reflection(of request: HTTPServerRequest) -> HTTPServerResponse {
        let version = "HTTP/\(request.version.major).\(request.version.minor)"
        var text = "\(request.method.rawValue) \(request.head.path ?? "/") \(version)\r\n"
        for field in request.head.headerFields where !sensitiveFields.contains(field.name) {
            text += "\(field.name.rawName): \(field.value)\r\n"
        }
        text += "\r\n"
        return HTTPServerResponse(status: .ok, headerFields: [.contentType: "message/http"], body: .bytes(Array(text.utf8)))
    }
}
