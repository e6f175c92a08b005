#if canImport(HTTPCore)
import HTTPCore  // (the fuzz build compiles HTTPCore's HTTPVersion and HTTPFieldSyntax in)
#endif

/// The form of the request target (RFC 9112 §3.2).
public enum RequestTargetForm: Equatable, Sendable {
    case origin      // "/path?query"
    case absolute    // "http://host/path"
    case asterisk    // "*" (OPTIONS only)
}

/// One complete request as the parser produced it: head bytes plus ranges, and the decoded body.
///
/// The head is kept as one copy of the raw bytes with ranges into it, so parsing allocates one array
/// per request (plus the body); strings are made only when asked for. Value type, `Sendable`.
public struct ParsedRequest: Sendable {
    /// Raw bytes of the request head, request line through the final CRLF CRLF.
    public let headBytes: [UInt8]
    let methodRange: Range<Int>
    let targetRange: Range<Int>
    /// Header fields in the order received: ranges of name and (trimmed) value in `headBytes`.
    let fieldRanges: [(name: Range<Int>, value: Range<Int>)]
    public let version: HTTPVersion
    public let targetForm: RequestTargetForm
    /// True when the connection may be reused after this request (HTTP/1.1 without `close`, or
    /// HTTP/1.0 with `keep-alive`).
    public let keepAlive: Bool
    /// The decoded body (de-chunked when chunked transfer coding was used).
    public let body: [UInt8]
    /// Trailer fields of a chunked body, in order (validated like header fields).
    public let trailers: [(name: String, value: String)]
    /// The Content-Length of a head reported before its body (`RequestParser.Output.head`); nil for
    /// chunked bodies and for complete requests.
    public let contentLength: Int?

    init(headBytes: [UInt8], methodRange: Range<Int>, targetRange: Range<Int>, fieldRanges: [(name: Range<Int>, value: Range<Int>)],
         version: HTTPVersion, targetForm: RequestTargetForm, keepAlive: Bool, body: [UInt8],
         trailers: [(name: String, value: String)], contentLength: Int? = nil) {
        self.headBytes = headBytes
        self.methodRange = methodRange
        self.targetRange = targetRange
        self.fieldRanges = fieldRanges
        self.version = version
        self.targetForm = targetForm
        self.keepAlive = keepAlive
        self.body = body
        self.trailers = trailers
        self.contentLength = contentLength
    }

    public var method: String { String(decoding: headBytes[methodRange], as: UTF8.self) }
    public var target: String { String(decoding: headBytes[targetRange], as: UTF8.self) }
    public var fieldCount: Int { fieldRanges.count }
    public func fieldName(at index: Int) -> String {
        String(decoding: headBytes[fieldRanges[index].name], as: UTF8.self)
    }
    public func fieldValueBytes(at index: Int) -> ArraySlice<UInt8> { headBytes[fieldRanges[index].value] }
    public func fieldValue(at index: Int) -> String {
        String(decoding: headBytes[fieldRanges[index].value], as: UTF8.self)
    }
    /// All header fields as (name, value) strings, in order. For tests and diagnostics.
    public var fields: [(name: String, value: String)] {
        (0..<fieldCount).map { (name: fieldName(at: $0), value: fieldValue(at: $0)) }
    }
    /// Values of every field named `name` (ASCII case-insensitive), in order.
    public func values(of name: String) -> [String] {
        let lower = Array(name.lowercased().utf8)
        return (0..<fieldCount).filter { asciiCaseInsensitiveEquals(headBytes[fieldRanges[$0].name], lower) }
            .map { fieldValue(at: $0) }
    }
}
