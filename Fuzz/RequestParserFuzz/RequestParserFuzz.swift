// libFuzzer entry point for RequestParser. Built by `make fuzz` together with the parser's sources
// (RequestParser.swift, ParsedRequest.swift, HTTPParseError.swift) using
// `swiftc -sanitize=fuzzer,address`.
//
// Input layout: byte 0 chooses where the input is split into two reads and byte 1 holds flags (bit 0:
// tight limits; bit 1: heads with bodies are reported first; bit 2: their bodies are streamed; bit 3:
// chunked-body mode); the rest is the byte stream a client sends. Every request found is inspected
// (method, target, fields, body), so crashes in the accessors count too. Invariants checked:
// consumed <= offered, progress when a request is returned, body within the limit; with bodies
// streamed, heads and parts in place.
//
// Chunked-body mode: the rest is the body of a fixed `Transfer-Encoding: chunked` POST head, so every
// input exercises body decoding. The body the parser delivers (buffered, or the concatenated streamed
// parts) is compared with an independent reference decoding (``ReferenceChunked``); a body the
// reference finds well-formed and within the limits must be accepted, and a rejected one must get
// 400 (413 for a buffered body over the limit, 431 for a trailer section over it), never a crash.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequestParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 2 else { return 0 }
    let chunkedMode = data[1] & 8 != 0
    let chunkedHead = Array("POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
    let body = Array(UnsafeBufferPointer(start: data + 2, count: size - 2))
    let input = chunkedMode ? chunkedHead + body : body
    var limits = RequestParserLimits()
    if data[1] & 1 == 1 {
        limits.maxRequestLineBytes = 32
        limits.maxHeaderBytes = 96
        limits.maxHeaderCount = 4
        limits.maxBodyBytes = 16
        limits.maxChunkLineBytes = 12
        if chunkedMode { limits.maxRequestLineBytes = 64; limits.maxHeaderBytes = 128 }  // the fixed head fits
    }
    let cut = input.isEmpty ? 0 : Int(data[0]) % (input.count + 1)
    var parser = RequestParser(limits: limits)
    parser.pausesAtBodies = data[1] & 2 != 0
    let streams = data[1] & 4 != 0 && parser.pausesAtBodies
    // Chunked mode: what the reference makes of the body, and what the parser delivered of it.
    let reference = chunkedMode ? ReferenceChunked.decode(body, limits: limits) : .unsure
    var firstBody: [UInt8]? = nil      // the first request's body, once complete
    var streamedBody: [UInt8] = []
    var inFirstRequest = true
    var pending: [UInt8] = []
    for piece in [input[0..<cut], input[cut...]] {
        pending += piece
        while !pending.isEmpty || parser.hasPendingOutput {
            let result: (consumed: Int, output: RequestParser.Output)
            do {
                result = try pending.withUnsafeBytes { try parser.parse($0) }
            } catch {
                let status = (error as? HTTPParseError)?.status ?? 0
                precondition([400, 413, 414, 417, 431, 501, 505].contains(status), "unexpected status \(status)")
                if chunkedMode && inFirstRequest {
                    precondition(status == 400 || status == 431 || (status == 413 && !streams), "chunked body rejected with \(status)")
                    if case .wellFormed = reference {
                        preconditionFailure("well-formed chunked body rejected: \(error)")
                    }
                }
                return 0
            }
            precondition(result.consumed >= 0 && result.consumed <= pending.count, "consumed out of range")
            switch result.output {
            case .head(let head):
                precondition(parser.pausesAtBodies && result.consumed > 0, "head without pausing or progress")
                _ = head.method.utf8.count + head.target.utf8.count
                do { try parser.continueBody(streaming: streams) } catch {
                    precondition(error.status == 413, "continueBody: unexpected error")
                    return 0
                }
                pending.removeFirst(result.consumed)
                continue
            case .bodyPart(let range):
                precondition(streams && !range.isEmpty && range.upperBound == result.consumed, "body part out of place")
                if inFirstRequest { streamedBody += pending[range] }
                pending.removeFirst(result.consumed)
                continue
            case .bodyEnd:
                precondition(streams, "body end without streaming")
                if inFirstRequest { firstBody = streamedBody; inFirstRequest = false }
                pending.removeFirst(result.consumed)
                continue
            default:
                break
            }
            pending.removeFirst(result.consumed)
            guard case .request(let request) = result.output else { break }
            precondition(result.consumed > 0, "request without progress")
            precondition(request.body.count <= limits.maxBodyBytes, "body over limit")
            _ = request.method.utf8.count + request.target.utf8.count
            for i in 0..<request.fieldCount { _ = request.fieldName(at: i); _ = request.fieldValue(at: i) }
            _ = request.keepAlive
            if inFirstRequest { firstBody = request.body; inFirstRequest = false }
        }
    }
    if chunkedMode, let delivered = firstBody {
        switch reference {
        case .wellFormed(let expected), .accepted(let expected):
            precondition(delivered == expected, "chunked body decoded differently from the reference")
        case .malformed(let why):
            preconditionFailure("malformed chunked body accepted (\(why))")
        case .unsure:
            break
        }
    }
    return 0
}

/// An independent decoding of a chunked body (RFC 9112 §7.1), written from the grammar and not from
/// the parser: for the fuzzer's differential check.
enum ReferenceChunked {
    enum Verdict {
        /// Plain chunks (hex sizes, CRLF everywhere, no extensions or trailers) within the limits:
        /// the parser must accept it with this body.
        case wellFormed([UInt8])
        /// Valid with extensions or trailers: if the parser accepts it, with this body.
        case accepted([UInt8])
        /// Not a chunked body: the parser must not accept it.
        case malformed(String)
        /// Incomplete, or beyond what the reference judges (limits, sizes near 64 bits).
        case unsure
    }

    static func decode(_ b: [UInt8], limits: RequestParserLimits) -> Verdict {
        var i = 0
        var body: [UInt8] = []
        var plain = true
        /// The line starting at `i` without its CRLF and the index after it; nil when incomplete;
        /// "bare" when an LF without CR or a CR without LF ends or is inside it.
        func line() -> (ArraySlice<UInt8>, Int)? {
            var j = i
            while j < b.count && b[j] != 0x0A { j += 1 }
            guard j < b.count else { return nil }
            return (b[i..<j], j + 1)
        }
        func isHex(_ c: UInt8) -> Bool { (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66) }
        while true {
            guard let (raw, next) = line() else { return .unsure }
            guard raw.last == 0x0D else { return .malformed("size line without CRLF") }
            let text = raw.dropLast()
            if text.contains(0x0D) { return .malformed("CR inside a size line") }
            let digits = text.prefix(while: isHex)
            guard !digits.isEmpty else { return .malformed("no hex digits") }
            let rest = text.dropFirst(digits.count)
            if !rest.isEmpty {
                // BWS ";" ext...: anything printable (or tab) after the ";".
                let afterSpace = rest.drop(while: { $0 == 0x20 || $0 == 0x09 })
                guard afterSpace.first == 0x3B else { return .malformed("junk after the size") }
                guard afterSpace.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else { return .malformed("control in extension") }
                plain = false
            }
            if text.count > limits.maxChunkLineBytes { return .unsure }
            let significant = digits.drop(while: { $0 == 0x30 })
            if significant.count > 15 { return .unsure }  // near or over 64 bits: the parser decides
            var size = 0
            for d in significant { size = size * 16 + Int(d <= 0x39 ? d - 0x30 : (d | 0x20) - 0x61 + 10) }
            i = next
            if size == 0 { break }
            if body.count + size > limits.maxBodyBytes { return .unsure }
            guard b.count - i >= size + 2 else {
                // Data cut short, or its CRLF missing where present.
                if b.count - i > size, b[i + size] != 0x0D { return .malformed("data not followed by CRLF") }
                return .unsure
            }
            body += b[i..<i + size]
            guard b[i + size] == 0x0D && b[i + size + 1] == 0x0A else { return .malformed("data not followed by CRLF") }
            i += size + 2
        }
        // Trailer section: field lines until an empty line.
        while true {
            guard let (raw, next) = line() else { return .unsure }
            guard raw.last == 0x0D else { return .malformed("trailer line without CRLF") }
            i = next
            if raw.count == 1 { return plain ? .wellFormed(body) : .accepted(body) }
            let text = raw.dropLast()
            if text.contains(0x0D) { return .malformed("CR inside a trailer line") }
            guard let colon = text.firstIndex(of: 0x3A), colon > text.startIndex else { return .malformed("trailer without name") }
            let name = text[..<colon]
            guard name.allSatisfy(isTokenByte) else { return .malformed("trailer name not a token") }
            guard text[(colon + 1)...].allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else { return .malformed("control in trailer") }
            plain = false
        }
    }
}
