// libFuzzer entry point for the upstream ResponseParser. Built by `make fuzz` together with the
// parser's own sources (Sources/HTTPCore: ResponseParser, ParsedResponseHead, ResponseParseError,
// ResponseParserLimits, HTTPBodyLength, HTTPFieldSyntax, HTTPVersion, ChunkedCoding) using
// `swiftc -sanitize=fuzzer,address`.
//
// Input layout: byte 0 chooses where the input is split into two reads; byte 1's bits pick tight or
// default limits (bit 0), whether the stream ends with EOF (bit 1), and which responses answer HEAD
// (bits 2-7, one per response); the rest is the byte stream an upstream sends. Every head is
// inspected (status, reason, fields), so crashes in the accessors count too. Invariants checked:
// consumed <= offered, body ranges inside the consumed bytes and non-empty, progress on every event
// but `.needMoreData`/`.end`, event order (1xx* head body* end), no body after a no-body head, a known
// length delivered exactly, errors of a known kind.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzResponseParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 2 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data + 2, count: size - 2))
    let flags = data[1]
    var limits = ResponseParserLimits()
    if flags & 1 == 1 {
        limits.maxStatusLineBytes = 24
        limits.maxHeaderBytes = 96
        limits.maxHeaderCount = 4
        limits.maxChunkLineBytes = 12
        limits.maxInformationalResponses = 2
    }
    let cut = input.isEmpty ? 0 : Int(data[0]) % (input.count + 1)
    var parser = ResponseParser(limits: limits)
    var responses = 0
    func isHEAD(_ n: Int) -> Bool { n < 6 && (flags >> (2 + n)) & 1 == 1 }
    parser.expectResponse(toHEAD: isHEAD(0))
    var sawHead = false
    var bodyLength = HTTPBodyLength.none
    var bodyBytes = 0
    var pending: [UInt8] = []

    func check(_ event: ResponseParser.Event, consumed: Int) {
        switch event {
        case .needMoreData:
            break
        case .informational(let head):
            precondition(!sawHead && head.status >= 100 && head.status < 200 && head.status != 101, "bad 1xx")
            precondition(consumed > 0, "head without progress")
            inspect(head)
        case .head(let head):
            precondition(!sawHead && head.status >= 200 && head.status <= 599, "bad head")
            precondition(consumed > 0, "head without progress")
            inspect(head)
            sawHead = true
            bodyLength = head.bodyLength
            bodyBytes = 0
            if bodyLength == .untilClose { precondition(!head.keepAlive, "close-delimited but keep-alive") }
            if isHEAD(responses) || head.status == 204 || head.status == 304 { precondition(bodyLength == .none, "body on no-body status") }
        case .body(let range):
            precondition(sawHead && !range.isEmpty && range.upperBound == consumed, "bad body range")
            precondition(bodyLength != .none, "body after a no-body head")
            bodyBytes += range.count
            if case .known(let n) = bodyLength { precondition(bodyBytes <= n, "body over Content-Length") }
        case .end(let trailers):
            precondition(sawHead, "end before head")
            if case .known(let n) = bodyLength { precondition(bodyBytes == n, "body shorter than Content-Length") }
            if bodyLength == .none { precondition(bodyBytes == 0) }
            precondition(trailers.count <= limits.maxHeaderCount, "too many trailers")
            for t in trailers { _ = t.name.utf8.count + t.value.utf8.count }
            responses += 1
            sawHead = false
            parser.expectResponse(toHEAD: isHEAD(responses))
        }
    }

    func inspect(_ head: ParsedResponseHead) {
        precondition(head.fieldCount <= limits.maxHeaderCount, "too many fields")
        precondition(head.headBytes.count <= limits.maxHeaderBytes, "head over limit")
        _ = head.reason.utf8.count
        for i in 0..<head.fieldCount { _ = head.fieldName(at: i).utf8.count + head.fieldValue(at: i).utf8.count }
        _ = head.values(of: "content-length")
    }

    func expectedError(_ error: any Error) {
        precondition(error is ResponseParseError, "unexpected error type")
    }

    for piece in [input[0..<cut], input[cut...]] {
        pending += piece
        while true {
            let result: (consumed: Int, event: ResponseParser.Event)
            do {
                result = try pending.withUnsafeBytes { try parser.parse($0) }
            } catch {
                expectedError(error)
                return 0
            }
            precondition(result.consumed >= 0 && result.consumed <= pending.count, "consumed out of range")
            check(result.event, consumed: result.consumed)
            pending.removeFirst(result.consumed)
            if case .needMoreData = result.event { break }
            if responses > 64 { return 0 }
        }
    }
    if flags & 2 == 2 {
        do {
            let event = try parser.endOfInput()
            check(event, consumed: 0)
        } catch {
            expectedError(error)
        }
    }
    return 0
}
