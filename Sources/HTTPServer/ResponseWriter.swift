import HTTPCore
import HTTPTypes

/// How a response body is delimited on the wire.
enum BodyFraming: Equatable {
    /// No body at all (1xx, 204, 304): no `Content-Length` either.
    case none
    case contentLength(Int64)
    /// Chunked transfer coding (HTTP/1.1 streams).
    case chunked
    /// Delimited by closing the connection (HTTP/1.0 streams).
    case closeDelimited
}

/// Serialises response heads and chunk framing into a byte buffer. Pure functions, no state.
enum ResponseWriter {
    /// Appends status line and header fields of `response` to `buffer`, adding `Date`, `Server`,
    /// the framing field and `Connection`. Framing and connection fields the handler set are dropped:
    /// the server owns them.
    static func appendHead(_ response: HTTPResponse, framing: BodyFraming, keepAlive: Bool, requestVersion: HTTPVersion,
                           serverLine: [UInt8]?, into buffer: inout [UInt8]) {
        let (hasDate, hasServer) = appendStatusAndFields(response, into: &buffer)
        appendServerFields(hasDate: hasDate, hasServer: hasServer, framing: framing, keepAlive: keepAlive,
                           requestVersion: requestVersion, serverLine: serverLine, into: &buffer)
    }

    /// `appendHead` for a head serialised beforehand.
    static func appendHead(_ prepared: PreparedHead, framing: BodyFraming, keepAlive: Bool, requestVersion: HTTPVersion,
                           serverLine: [UInt8]?, into buffer: inout [UInt8]) {
        buffer.append(contentsOf: prepared.lines)
        appendServerFields(hasDate: prepared.hasDate, hasServer: prepared.hasServer, framing: framing, keepAlive: keepAlive,
                           requestVersion: requestVersion, serverLine: serverLine, into: &buffer)
    }

    /// `appendHead` for a forwarded head: its kept fields' received bytes, then its appended fields.
    static func appendHead(_ forwarded: ForwardedResponseHead, framing: BodyFraming, keepAlive: Bool, requestVersion: HTTPVersion,
                           serverLine: [UInt8]?, into buffer: inout [UInt8]) {
        buffer.append(contentsOf: statusLine(forwarded.status))
        var hasDate = false, hasServer = false
        forwarded.forEachKeptField { name, value in
            @inline(__always) func named(_ literal: StaticString) -> Bool { asciiCaseInsensitiveEquals(name, literal) }
            // The same fields as `appendStatusAndFields` drops and notes, compared on the received bytes.
            switch name.count {
            case 4: if named("date") { hasDate = true }
            case 6: if named("server") { hasServer = true }
            case 10: if named("connection") || named("keep-alive") { return }
            case 14: if named("content-length") { return }
            case 17: if named("transfer-encoding") { return }
            default: break
            }
            buffer.append(contentsOf: name)
            buffer.append(0x3A); buffer.append(0x20)
            buffer.append(contentsOf: value)
            buffer.append(0x0D); buffer.append(0x0A)
        }
        let (appendedDate, appendedServer) = appendFields(forwarded.appended, into: &buffer)
        appendServerFields(hasDate: hasDate || appendedDate, hasServer: hasServer || appendedServer, framing: framing,
                           keepAlive: keepAlive, requestVersion: requestVersion, serverLine: serverLine, into: &buffer)
    }

    /// The status line and the handler's fields, without the ones the server owns; whether `Date`
    /// and `Server` were among them.
    static func appendStatusAndFields(_ response: HTTPResponse, into buffer: inout [UInt8]) -> (hasDate: Bool, hasServer: Bool) {
        buffer.append(contentsOf: statusLine(response.status))
        return appendFields(response.headerFields, into: &buffer)
    }

    /// The field lines of `fields`, without the ones the server owns; whether `Date` and `Server`
    /// were among them.
    private static func appendFields(_ fields: HTTPFields, into buffer: inout [UInt8]) -> (hasDate: Bool, hasServer: Bool) {
        var hasDate = false, hasServer = false
        for field in fields {
            let name = field.name
            // By length first: most names match none of these, and a failed String == is a call.
            switch name.canonicalName.utf8.count {
            case 4: if name == .date { hasDate = true }
            case 6: if name == .server { hasServer = true }
            case 10: if name == .connection || name == Self.keepAliveName { continue }
            case 14: if name == .contentLength { continue }
            case 17: if name == .transferEncoding { continue }
            default: break
            }
            buffer.append(contentsOf: name.rawName.utf8)
            buffer.append(0x3A); buffer.append(0x20)
            // The value's bytes as they are (obs-text from an upstream stays byte for byte; `.value`
            // would decode it as lossy UTF-8).
            field.withUnsafeBytesOfValue { buffer.append(contentsOf: $0) }
            buffer.append(0x0D); buffer.append(0x0A)
        }
        return (hasDate, hasServer)
    }

    /// `Date`, `Server` (unless the handler set them), the framing field, `Connection`, and the empty
    /// line that ends the head.
    private static func appendServerFields(hasDate: Bool, hasServer: Bool, framing: BodyFraming, keepAlive: Bool,
                                           requestVersion: HTTPVersion, serverLine: [UInt8]?, into buffer: inout [UInt8]) {
        if !hasDate { DateHeaderCache.appendLine(into: &buffer) }
        if !hasServer, let serverLine { buffer.append(contentsOf: serverLine) }
        switch framing {
        case .none:
            break
        case .contentLength(let n):
            buffer.append("Content-Length: ")
            appendDecimal(n, into: &buffer)
            buffer.append(0x0D); buffer.append(0x0A)
        case .chunked:
            buffer.append("Transfer-Encoding: chunked\r\n")
        case .closeDelimited:
            break
        }
        if !keepAlive {
            buffer.append("Connection: close\r\n")
        } else if requestVersion == .http1_0 {
            buffer.append("Connection: keep-alive\r\n")
        }
        buffer.append(0x0D); buffer.append(0x0A)
    }

    private static let keepAliveName = HTTPField.Name("keep-alive")!

    /// Appends a `101 Switching Protocols` head: the status line and the handler's fields (its
    /// `Upgrade` among them), `Date`, `Server`, and `Connection: upgrade`.
    static func appendSwitchingHead(_ response: HTTPResponse, serverLine: [UInt8]?, into buffer: inout [UInt8]) {
        let (hasDate, hasServer) = appendStatusAndFields(response, into: &buffer)
        if !hasDate { DateHeaderCache.appendLine(into: &buffer) }
        if !hasServer, let serverLine { buffer.append(contentsOf: serverLine) }
        buffer.append("Connection: upgrade\r\n")
        buffer.append(0x0D); buffer.append(0x0A)
    }
    static let continueResponse: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// Appends an interim (1xx) response: its status line and fields, without the fields the
    /// server owns (framing, `Connection`), and the empty line. No `Date` or `Server`.
    static func appendInterim(_ response: HTTPResponse, into buffer: inout [UInt8]) {
        _ = appendStatusAndFields(response, into: &buffer)
        buffer.append(0x0D); buffer.append(0x0A)
    }
    /// Status lines of the statuses the server itself sends, indexed by code, with their phrase.
    private static let commonStatusLines: [(phrase: String, line: [UInt8])?] = {
        var table = [(phrase: String, line: [UInt8])?](repeating: nil, count: 600)
        for code in [200, 204, 206, 301, 304, 400, 403, 404, 405, 406, 408, 413, 414, 416, 417, 431, 500, 501, 503, 505] {
            table[code] = (reasonPhrase(code), Array("HTTP/1.1 \(code) \(reasonPhrase(code))\r\n".utf8))
        }
        return table
    }()

    static func statusLine(_ status: HTTPResponse.Status) -> [UInt8] {
        if status.code >= 0 && status.code < commonStatusLines.count, let common = commonStatusLines[status.code],
           status.reasonPhrase.isEmpty || status.reasonPhrase == common.phrase {
            return common.line
        }
        let phrase = status.reasonPhrase.isEmpty ? reasonPhrase(status.code) : status.reasonPhrase
        return Array("HTTP/1.1 \(status.code) \(phrase)\r\n".utf8)
    }

    static func appendDecimal(_ value: Int64, into buffer: inout [UInt8]) {
        if value == 0 { buffer.append(0x30); return }
        var v = value
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var n = 0
        withUnsafeMutableBytes(of: &digits) { d in
            while v > 0 { d[n] = UInt8(v % 10) + 0x30; v /= 10; n += 1 }
            for i in stride(from: n - 1, through: 0, by: -1) { buffer.append(d[i]) }
        }
    }

    static func reasonPhrase(_ code: Int) -> String {
        switch code {
        case 100: return "Continue"
        case 102: return "Processing"
        case 103: return "Early Hints"
        case 200: return "OK"
        case 201: return "Created"
        case 204: return "No Content"
        case 206: return "Partial Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 304: return "Not Modified"
        case 400: return "Bad Request"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 406: return "Not Acceptable"
        case 408: return "Request Timeout"
        case 412: return "Precondition Failed"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 416: return "Range Not Satisfiable"
        case 417: return "Expectation Failed"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 505: return "HTTP Version Not Supported"
        default: return "Status \(code)"
        }
    }
}
