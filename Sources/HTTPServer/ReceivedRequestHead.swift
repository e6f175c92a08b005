/// A request head as the parser read it: the raw head bytes and the ranges of its fields, for code
/// that passes the request on (a proxy copies the fields it keeps by range instead of building and
/// serialising `HTTPField`s). Only valid for the `HTTPServerRequest` it came with while that
/// request's `head` is unchanged (``HTTPServerRequest/received``). Value type, `Sendable`.
public struct ReceivedRequestHead: Sendable {
    /// Request line through the final CRLF CRLF.
    public let headBytes: [UInt8]
    let fieldRanges: [(name: Range<Int>, value: Range<Int>)]
    public let targetForm: RequestTargetForm

    init(_ parsed: ParsedRequest) {
        headBytes = parsed.headBytes
        fieldRanges = parsed.fieldRanges
        targetForm = parsed.targetForm
    }

    public var fieldCount: Int { fieldRanges.count }

    /// Calls `body` with the name and value bytes (value without surrounding whitespace) of every
    /// field, in order. The pointers live for the call only.
    public func forEachField(_ body: (_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>) -> Void) {
        headBytes.withUnsafeBufferPointer { bytes in
            for ranges in fieldRanges {
                body(UnsafeBufferPointer(rebasing: bytes[ranges.name]), UnsafeBufferPointer(rebasing: bytes[ranges.value]))
            }
        }
    }
}
