/// One response head as the response parser produced it: the raw head bytes plus ranges into them,
/// and the framing the parser derived. Parsing allocates one array per head; strings are made only
/// when asked for. Value type, `Sendable`.
public struct ParsedResponseHead: Sendable {
    /// Raw bytes of the head, status line through the final CRLF CRLF.
    public let headBytes: [UInt8]
    public let version: HTTPVersion
    /// The status code, 100...599.
    public let status: Int
    let reasonRange: Range<Int>
    /// Header fields in the order received: ranges of name and (trimmed) value in `headBytes`.
    package let fieldRanges: [(name: Range<Int>, value: Range<Int>)]
    /// How the body is delimited (`.none` for 1xx heads).
    public let bodyLength: HTTPBodyLength
    /// True when the connection may carry another exchange after this response completes: HTTP/1.1
    /// without `Connection: close`, or HTTP/1.0 with `Connection: keep-alive`; never for a
    /// close-delimited body.
    public let keepAlive: Bool
    /// The transfer codings of `Transfer-Encoding`, lower-cased, in order (empty without the field).
    /// Anything other than exactly `["chunked"]` means the body bytes are transfer-coded.
    public let transferCodings: [[UInt8]]

    public var reason: String { String(decoding: headBytes[reasonRange], as: UTF8.self) }
    public var isInformational: Bool { status < 200 }
    public var fieldCount: Int { fieldRanges.count }
    public func fieldName(at index: Int) -> String {
        String(decoding: headBytes[fieldRanges[index].name], as: UTF8.self)
    }
    public func fieldNameBytes(at index: Int) -> ArraySlice<UInt8> { headBytes[fieldRanges[index].name] }
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
