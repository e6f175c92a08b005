#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(HTTPCore)
import HTTPCore  // (the fuzz build compiles HTTPCore's HTTPVersion and ChunkedCoding in)
#endif

/// Size limits the parser enforces, each with the status it answers when exceeded.
public struct RequestParserLimits: Sendable, Equatable {
    /// Longest request line in bytes, without CRLF (414 URI Too Long).
    public var maxRequestLineBytes: Int = 8 * 1024
    /// Largest header section in bytes, request line included; also bounds a trailer section (431).
    public var maxHeaderBytes: Int = 16 * 1024
    /// Most header fields in one request; also bounds the trailer fields (431).
    public var maxHeaderCount: Int = 100
    /// Largest decoded request body (413 Content Too Large).
    public var maxBodyBytes: Int = 1 << 20
    /// Longest chunk-size line, extensions included (400).
    public var maxChunkLineBytes: Int = 1024

    public init() {}
}

/// Incremental, strict HTTP/1.1 request parser (RFC 9112), allocation-light.
///
/// Feed it the unconsumed input bytes; it returns how many it consumed and, when one request is
/// complete, that request. Bytes it did not consume (an incomplete line) must be passed again, followed
/// by whatever arrives next: the parser remembers how far it scanned, so a request split at every byte
/// boundary costs linear time. After it returns a request, call it again with the remaining bytes for
/// the next pipelined request. After it throws, the connection must be closed: the stream is unusable.
///
/// Plain value type with no references to the input; not thread-safe (one connection owns one).
public struct RequestParser {
    public enum Output {
        case needMoreData
        case request(ParsedRequest)
        /// With `pausesAtBodies`: a head whose body follows (its `body` is empty). Call
        /// `continueBody(streaming:)` before parsing on.
        case head(ParsedRequest)
        /// A streamed body's next bytes: this range of the buffer just passed to `parse` (copy them
        /// out before the buffer changes).
        case bodyPart(Range<Int>)
        /// A streamed body is complete (with the trailer fields of a chunked body); the next request
        /// may follow.
        case bodyEnd(trailers: [(name: String, value: String)])
    }

    private enum State: Equatable {
        case head
        case fixedBody(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers
        /// A streamed Content-Length body is complete; the next `parse` reports `.bodyEnd`.
        case streamedBodyEnd
    }

    /// What happens to the body of the current request.
    private enum BodyDisposition { case buffered, undecided, streamed }

    public let limits: RequestParserLimits
    private var state: State = .head
    private var disposition = BodyDisposition.buffered

    /// When true, a request with a body is first reported as `.head`; the caller then decides with
    /// `continueBody(streaming:)` whether its body is buffered (as without this flag, `.request` at
    /// the end) or streamed (`.bodyPart`s then `.bodyEnd`, no size limit: the consumer bounds it).
    public var pausesAtBodies = false

    /// True when `parse` has an output to report even with no further input (`.bodyEnd` of a
    /// streamed Content-Length body): call it with the remaining (possibly empty) input.
    public var hasPendingOutput: Bool { state == .streamedBodyEnd }

    /// True while a streamed body is being parsed (from `continueBody(streaming: true)` to `.bodyEnd`).
    public var isStreamingBody: Bool { disposition == .streamed }

    /// Decides how the body of the request just reported as `.head` is read. Buffering applies
    /// `maxBodyBytes` (throws 413 for a Content-Length over it).
    public mutating func continueBody(streaming: Bool) throws(HTTPParseError) {
        precondition(disposition == .undecided, "continueBody without a pending head")
        if streaming {
            disposition = .streamed
        } else {
            disposition = .buffered
            if case .fixedBody(let length) = state {
                guard length <= limits.maxBodyBytes else { throw .contentTooLarge }
                body.reserveCapacity(length)
            }
        }
    }

    // Head scanning, offsets relative to the first unconsumed byte of the head.
    private var scanned = 0
    private var lineStart = 0
    private var headStart = 0
    private var requestLineDone = false
    private var methodRange = 0..<0
    private var targetRange = 0..<0
    private var version = HTTPVersion.http1_1
    private var targetForm = RequestTargetForm.origin
    private var fieldRanges: [(name: Range<Int>, value: Range<Int>)] = []

    // Framing facts collected from the header fields.
    private var contentLength: Int?
    private var transferCodings: [[UInt8]] = []
    private var hasTransferEncoding = false
    private var hostCount = 0
    /// `Authorization` is a singleton field (RFC 9110 §11.6.2): a second line is a 400, as in nginx,
    /// since servers behind differ on which line they read.
    private var authorizationCount = 0
    private var connectionClose = false
    private var connectionKeepAlive = false
    private var expectContinue = false

    // Pending request while its body arrives.
    private var pendingHead: [UInt8] = []
    private var body: [UInt8] = []
    private var trailers: [(name: String, value: String)] = []
    private var trailerBytes = 0

    /// True after a head with `Expect: 100-continue` whose body has not started to arrive: the server
    /// should send `100 Continue` (once) before waiting for the body.
    public private(set) var awaitingContinue = false

    /// True when no byte of a next request has been seen (between requests).
    public var isBetweenRequests: Bool { state == .head && scanned == 0 }

    /// True while a head was parsed and its body is still being read.
    public var isReadingBody: Bool { state != .head }

    public init(limits: RequestParserLimits = RequestParserLimits()) {
        self.limits = limits
        fieldRanges.reserveCapacity(16)
    }

    /// Parses as much of `buffer` as possible. See the type's documentation for the contract.
    public mutating func parse(_ buffer: UnsafeRawBufferPointer) throws(HTTPParseError) -> (consumed: Int, output: Output) {
        var pos = 0
        if state == .head {
            guard let headEnd = try scanHead(buffer) else { return (0, .needMoreData) }
            try finishHead(buffer, headEnd: headEnd)
            pos = headEnd
            if state == .head {  // no body
                return (pos, .request(makeRequest()))
            }
            if pausesAtBodies {
                disposition = .undecided
                return (pos, .head(makeHead()))
            }
        }
        while true {
            let available = buffer.count - pos
            switch state {
            case .head:
                if disposition == .streamed {
                    let t = trailers
                    reset()
                    return (pos, .bodyEnd(trailers: t))
                }
                return (pos, .request(makeRequest()))
            case .streamedBodyEnd:
                reset()
                return (pos, .bodyEnd(trailers: []))
            case .fixedBody(let remaining):
                guard available > 0 else { return (pos, .needMoreData) }
                awaitingContinue = false
                let n = min(remaining, available)
                if disposition == .streamed {
                    state = remaining == n ? .streamedBodyEnd : .fixedBody(remaining: remaining - n)
                    return (pos + n, .bodyPart(pos..<pos + n))
                }
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[pos..<pos + n]))
                pos += n
                state = remaining == n ? .head : .fixedBody(remaining: remaining - n)
            case .chunkSize:
                guard available > 0 else { return (pos, .needMoreData) }
                awaitingContinue = false
                guard let lineEnd = try scanLine(buffer, from: pos, limit: limits.maxChunkLineBytes,
                                                 error: .badRequest("chunk-size line too long")) else {
                    return (pos, .needMoreData)
                }
                let size = try parseChunkSize(buffer, pos..<lineEnd - 2)
                pos = lineEnd
                if size == 0 {
                    state = .trailers
                    trailerBytes = 0
                } else {
                    if disposition != .streamed {
                        guard size <= limits.maxBodyBytes - body.count else { throw .contentTooLarge }
                    }
                    state = .chunkData(remaining: size)
                }
            case .chunkData(let remaining):
                guard available > 0 else { return (pos, .needMoreData) }
                let n = min(remaining, available)
                state = remaining == n ? .chunkDataEnd : .chunkData(remaining: remaining - n)
                if disposition == .streamed { return (pos + n, .bodyPart(pos..<pos + n)) }
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[pos..<pos + n]))
                pos += n
            case .chunkDataEnd:
                guard available >= 2 else {
                    if available == 1 && buffer[pos] != 0x0D { throw .badRequest("chunk data not followed by CRLF") }
                    return (pos, .needMoreData)
                }
                guard buffer[pos] == 0x0D && buffer[pos + 1] == 0x0A else {
                    throw .badRequest("chunk data not followed by CRLF")
                }
                pos += 2
                state = .chunkSize
            case .trailers:
                guard let lineEnd = try scanLine(buffer, from: pos, limit: limits.maxHeaderBytes,
                                                 error: .headersTooLarge("trailer section too large")) else {
                    return (pos, .needMoreData)
                }
                trailerBytes += lineEnd - pos
                guard trailerBytes <= limits.maxHeaderBytes else { throw .headersTooLarge("trailer section too large") }
                if lineEnd - pos == 2 {
                    pos = lineEnd
                    state = .head
                } else {
                    guard trailers.count < limits.maxHeaderCount else { throw .headersTooLarge("too many trailer fields") }
                    let (name, value) = try parseFieldLine(buffer, pos..<lineEnd - 2)
                    trailers.append((String(decoding: UnsafeRawBufferPointer(rebasing: buffer[name]), as: UTF8.self),
                                     String(decoding: UnsafeRawBufferPointer(rebasing: buffer[value]), as: UTF8.self)))
                    pos = lineEnd
                }
            }
        }
    }

    // MARK: Lines

    /// Finds the CRLF ending the line that starts at `from`; returns the index after the LF, or nil
    /// when more bytes are needed. Remembers how far it looked in `scanned` (relative to `from`).
    private mutating func scanLine(_ buffer: UnsafeRawBufferPointer, from: Int, limit: Int,
                                   error: HTTPParseError) throws(HTTPParseError) -> Int? {
        let start = from + scanned
        if let lf = findLF(buffer, from: start) {
            scanned = 0
            guard lf > from, buffer[lf - 1] == 0x0D else { throw .badRequest("bare LF in a chunked body line") }
            if lf - 1 - from > limit { throw error }
            try rejectBareCR(buffer, from..<lf - 1)
            return lf + 1
        }
        scanned = buffer.count - from
        if scanned > limit + 1 { throw error }
        return nil
    }

    @inline(__always)
    private func findLF(_ buffer: UnsafeRawBufferPointer, from: Int) -> Int? {
        guard from < buffer.count, let base = buffer.baseAddress else { return nil }
        guard let hit = memchr(base + from, 0x0A, buffer.count - from) else { return nil }
        return base.distance(to: UnsafeRawPointer(hit))
    }

    private func rejectBareCR(_ buffer: UnsafeRawBufferPointer, _ range: Range<Int>) throws(HTTPParseError) {
        guard let base = buffer.baseAddress, !range.isEmpty else { return }
        if memchr(base + range.lowerBound, 0x0D, range.count) != nil { throw .badRequest("bare CR in line") }
    }

    // MARK: Head

    /// Scans header lines; returns the offset just past the empty line ending the head, or nil.
    private mutating func scanHead(_ buffer: UnsafeRawBufferPointer) throws(HTTPParseError) -> Int? {
        while true {
            guard let lf = findLF(buffer, from: scanned) else {
                scanned = buffer.count
                if !requestLineDone && buffer.count - lineStart > limits.maxRequestLineBytes + 1 { throw .uriTooLong }
                if buffer.count - headStart > limits.maxHeaderBytes + 1 { throw .headersTooLarge("header section too large") }
                return nil
            }
            guard lf > lineStart, buffer[lf - 1] == 0x0D else { throw .badRequest("bare LF in request head") }
            let line = lineStart..<(lf - 1)
            scanned = lf + 1
            try rejectBareCR(buffer, line)
            if !requestLineDone {
                if line.isEmpty {
                    // RFC 9112 §2.2: ignore empty lines received before the request line.
                    headStart = scanned
                } else {
                    if line.count > limits.maxRequestLineBytes { throw .uriTooLong }
                    try parseRequestLine(buffer, line)
                    requestLineDone = true
                }
            } else if line.isEmpty {
                if scanned - headStart > limits.maxHeaderBytes { throw .headersTooLarge("header section too large") }
                return scanned
            } else {
                guard fieldRanges.count < limits.maxHeaderCount else { throw .headersTooLarge("too many header fields") }
                let (name, value) = try parseFieldLine(buffer, line)
                fieldRanges.append((name, value))
                try interpretField(buffer, name: name, value: value)
            }
            if scanned - headStart > limits.maxHeaderBytes { throw .headersTooLarge("header section too large") }
            lineStart = scanned
        }
    }

    private mutating func parseRequestLine(_ buffer: UnsafeRawBufferPointer, _ line: Range<Int>) throws(HTTPParseError) {
        var i = line.lowerBound
        while i < line.upperBound && isTokenByte(buffer[i]) { i += 1 }
        guard i > line.lowerBound, i < line.upperBound, buffer[i] == 0x20 else {
            throw .badRequest("malformed method in request line")
        }
        methodRange = line.lowerBound..<i
        i += 1
        let targetStart = i
        while i < line.upperBound && buffer[i] > 0x20 && buffer[i] < 0x7F { i += 1 }
        guard i > targetStart, i < line.upperBound, buffer[i] == 0x20 else {
            throw .badRequest("malformed request target")
        }
        targetRange = targetStart..<i
        i += 1
        // HTTP-version = "HTTP/" DIGIT "." DIGIT
        guard line.upperBound - i == 8,
              buffer[i] == 0x48, buffer[i + 1] == 0x54, buffer[i + 2] == 0x54, buffer[i + 3] == 0x50,
              buffer[i + 4] == 0x2F, isDigit(buffer[i + 5]), buffer[i + 6] == 0x2E, isDigit(buffer[i + 7]) else {
            throw .badRequest("malformed HTTP version")
        }
        let major = Int(buffer[i + 5] - 0x30), minor = Int(buffer[i + 7] - 0x30)
        guard major == 1 else { throw .versionNotSupported }
        version = HTTPVersion(major: 1, minor: minor == 0 ? 0 : 1)

        let method = UnsafeRawBufferPointer(rebasing: buffer[methodRange])
        // Any token is a method (RFC 9110 §9.1): extension methods reach the handlers, which answer
        // or forward them. Only CONNECT (a tunnel this server does not make) is refused here.
        let known = KnownMethod(method)
        if known == .connect { throw .notImplemented("CONNECT not supported") }
        let first = buffer[targetStart]
        if first == 0x2F {
            targetForm = .origin
        } else if targetRange.count == 1 && first == 0x2A {
            guard known == .options else { throw .badRequest("asterisk-form target is only allowed with OPTIONS") }
            targetForm = .asterisk
        } else if let authorityStart = httpSchemePrefixLength(UnsafeRawBufferPointer(rebasing: buffer[targetRange])) {
            try validateAbsoluteFormAuthority(UnsafeRawBufferPointer(rebasing: buffer[(targetStart + authorityStart)..<targetRange.upperBound]))
            targetForm = .absolute
        } else {
            throw .badRequest("malformed request target")
        }
    }

    /// Parses `name ":" OWS value OWS`; returns the name and trimmed value ranges.
    private func parseFieldLine(_ buffer: UnsafeRawBufferPointer, _ line: Range<Int>) throws(HTTPParseError) -> (Range<Int>, Range<Int>) {
        let first = buffer[line.lowerBound]
        if first == 0x20 || first == 0x09 { throw .badRequest("obsolete line folding") }
        var i = line.lowerBound
        while i < line.upperBound && isTokenByte(buffer[i]) { i += 1 }
        guard i < line.upperBound else { throw .badRequest("header field without colon") }
        let c = buffer[i]
        if c == 0x20 || c == 0x09 { throw .badRequest("whitespace before colon in header field") }
        guard c == 0x3A, i > line.lowerBound else { throw .badRequest("malformed header field name") }
        let name = line.lowerBound..<i
        i += 1
        while i < line.upperBound && (buffer[i] == 0x20 || buffer[i] == 0x09) { i += 1 }
        var end = line.upperBound
        while end > i && (buffer[end - 1] == 0x20 || buffer[end - 1] == 0x09) { end -= 1 }
        var j = i
        while j < end {
            let b = buffer[j]
            if (b < 0x20 && b != 0x09) || b == 0x7F { throw .badRequest("invalid character in header field value") }
            j += 1
        }
        return (name, i..<end)
    }

    private static let tokenChunked: [UInt8] = Array("chunked".utf8)

    private mutating func interpretField(_ buffer: UnsafeRawBufferPointer, name: Range<Int>, value: Range<Int>) throws(HTTPParseError) {
        let n = UnsafeRawBufferPointer(rebasing: buffer[name])
        let v = UnsafeRawBufferPointer(rebasing: buffer[value])
        switch name.count {
        case 4 where asciiCaseInsensitiveEquals(n, "host"):
            hostCount += 1
            for b in v where !isHostByte(b) { throw .badRequest("invalid Host header field") }
        case 13 where asciiCaseInsensitiveEquals(n, "authorization"):
            authorizationCount += 1
            if authorizationCount > 1 { throw .badRequest("more than one Authorization header field") }
        case 14 where asciiCaseInsensitiveEquals(n, "content-length"):
            try forEachListElement(v) { (element: UnsafeRawBufferPointer) throws(HTTPParseError) in
                guard !element.isEmpty else { throw .badRequest("invalid Content-Length") }
                var length = 0
                for b in element {
                    guard isDigit(b) else { throw .badRequest("invalid Content-Length") }
                    let (m, o1) = length.multipliedReportingOverflow(by: 10)
                    let (s, o2) = m.addingReportingOverflow(Int(b - 0x30))
                    // Not saturated: a clamped length would be forwarded as a different number.
                    guard !o1 && !o2 else { throw .badRequest("Content-Length too large") }
                    length = s
                }
                if let existing = contentLength, existing != length {
                    throw .badRequest("conflicting Content-Length values")
                }
                contentLength = length
            }
            if contentLength == nil { throw .badRequest("invalid Content-Length") }
        case 17 where asciiCaseInsensitiveEquals(n, "transfer-encoding"):
            hasTransferEncoding = true
            forEachListElementNoThrow(v) { element in
                if !element.isEmpty { transferCodings.append(element.map { ($0 >= 0x41 && $0 <= 0x5A) ? $0 | 0x20 : $0 }) }
            }
        case 10 where asciiCaseInsensitiveEquals(n, "connection"):
            forEachListElementNoThrow(v) { element in
                if asciiCaseInsensitiveEquals(element, "close") { connectionClose = true }
                if asciiCaseInsensitiveEquals(element, "keep-alive") { connectionKeepAlive = true }
            }
        case 6 where asciiCaseInsensitiveEquals(n, "expect"):
            guard asciiCaseInsensitiveEquals(v, "100-continue") else { throw .expectationFailed }
            expectContinue = true
        default:
            break
        }
    }

    /// Applies the framing rules once the whole head is known and sets up body reading.
    private mutating func finishHead(_ buffer: UnsafeRawBufferPointer, headEnd: Int) throws(HTTPParseError) {
        if version == .http1_1 {
            guard hostCount == 1 else {
                throw .badRequest(hostCount == 0 ? "missing Host header field" : "more than one Host header field")
            }
        } else if hostCount > 1 {
            throw .badRequest("more than one Host header field")
        }
        pendingHead = Array(UnsafeRawBufferPointer(rebasing: buffer[headStart..<headEnd]))
        body = []
        trailers = []
        if hasTransferEncoding {
            if version == .http1_0 { throw .badRequest("Transfer-Encoding in an HTTP/1.0 request") }
            if contentLength != nil { throw .badRequest("both Content-Length and Transfer-Encoding") }
            guard let last = transferCodings.last, last == Self.tokenChunked else {
                throw .badRequest("Transfer-Encoding other than a final chunked")
            }
            if transferCodings.count > 1 {
                if transferCodings.dropLast().contains(Self.tokenChunked) { throw .badRequest("chunked applied more than once") }
                throw .notImplemented("transfer coding not implemented")
            }
            state = .chunkSize
            awaitingContinue = expectContinue && version == .http1_1
        } else if let length = contentLength, length > 0 {
            if !pausesAtBodies {  // else decided in continueBody
                guard length <= limits.maxBodyBytes else { throw .contentTooLarge }
                body.reserveCapacity(length)
            }
            state = .fixedBody(remaining: length)
            awaitingContinue = expectContinue && version == .http1_1
        } else {
            state = .head
        }
        scanned = 0
    }

    /// The head just parsed, without its body, leaving the parser ready to read the body.
    private func makeHead() -> ParsedRequest {
        let shift = headStart
        let keepAlive = version == .http1_1 ? !connectionClose : (connectionKeepAlive && !connectionClose)
        return ParsedRequest(
            headBytes: pendingHead,
            methodRange: (methodRange.lowerBound - shift)..<(methodRange.upperBound - shift),
            targetRange: (targetRange.lowerBound - shift)..<(targetRange.upperBound - shift),
            fieldRanges: fieldRanges.map { (name: ($0.name.lowerBound - shift)..<($0.name.upperBound - shift),
                                             value: ($0.value.lowerBound - shift)..<($0.value.upperBound - shift)) },
            version: version, targetForm: targetForm, keepAlive: keepAlive, body: [], trailers: [],
            contentLength: contentLength)
    }

    private mutating func makeRequest() -> ParsedRequest {
        let shift = headStart
        let keepAlive = version == .http1_1 ? !connectionClose : (connectionKeepAlive && !connectionClose)
        let request = ParsedRequest(
            headBytes: pendingHead,
            methodRange: (methodRange.lowerBound - shift)..<(methodRange.upperBound - shift),
            targetRange: (targetRange.lowerBound - shift)..<(targetRange.upperBound - shift),
            fieldRanges: fieldRanges.map { (name: ($0.name.lowerBound - shift)..<($0.name.upperBound - shift),
                                             value: ($0.value.lowerBound - shift)..<($0.value.upperBound - shift)) },
            version: version, targetForm: targetForm, keepAlive: keepAlive, body: body, trailers: trailers)
        reset()
        return request
    }

    private mutating func reset() {
        state = .head
        disposition = .buffered
        scanned = 0
        lineStart = 0
        headStart = 0
        requestLineDone = false
        fieldRanges.removeAll(keepingCapacity: true)
        contentLength = nil
        transferCodings.removeAll()
        hasTransferEncoding = false
        hostCount = 0
        authorizationCount = 0
        connectionClose = false
        connectionKeepAlive = false
        expectContinue = false
        awaitingContinue = false
        pendingHead = []
        body = []
        trailers = []
    }

    // MARK: Chunked

    private func parseChunkSize(_ buffer: UnsafeRawBufferPointer, _ line: Range<Int>) throws(HTTPParseError) -> Int {
        switch ChunkedCoding.parseSizeLine(UnsafeRawBufferPointer(rebasing: buffer[line])) {
        case .size(let size): return size
        case .tooLarge: throw .badRequest("chunk size does not fit in 64 bits")
        case .invalidSize: throw .badRequest("invalid chunk size")
        case .invalidExtension: throw .badRequest("invalid chunk extension")
        }
    }
}

// MARK: Character classes

@inline(__always) func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

@inline(__always) func hexValue(_ b: UInt8) -> Int? {
    switch b {
    case 0x30...0x39: return Int(b - 0x30)
    case 0x41...0x46: return Int(b - 0x41 + 10)
    case 0x61...0x66: return Int(b - 0x61 + 10)
    default: return nil
    }
}

/// tchar (RFC 9110 §5.6.2): the one table, ``HTTPFieldSyntax/isTokenByte(_:)``.
@inline(__always) func isTokenByte(_ b: UInt8) -> Bool { HTTPFieldSyntax.isTokenByte(b) }

/// Characters allowed in a Host field value: reg-name, IP-literal brackets, port colon, pct-encoding.
@inline(__always) func isHostByte(_ b: UInt8) -> Bool {
    if (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) { return true }
    switch b {
    case 0x2D, 0x2E, 0x5F, 0x7E,                                     // - . _ ~
         0x21, 0x24, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x3B, 0x3D, // sub-delims
         0x3A, 0x5B, 0x5D, 0x25:                                     // : [ ] %
        return true
    default:
        return false
    }
}

/// The length of `target`'s `http://` or `https://` prefix (any case) when something follows it, else nil.
private func httpSchemePrefixLength(_ target: UnsafeRawBufferPointer) -> Int? {
    let http = Array("http://".utf8), https = Array("https://".utf8)
    if target.count > http.count, asciiCaseInsensitiveEquals(UnsafeRawBufferPointer(rebasing: target[0..<http.count]), http) { return http.count }
    if target.count > https.count, asciiCaseInsensitiveEquals(UnsafeRawBufferPointer(rebasing: target[0..<https.count]), https) { return https.count }
    return nil
}

/// Checks the authority of an absolute-form target (`rest`: what follows `http://`, up to the end of
/// the target), which stands in for the Host field (RFC 9112 §3.2.2), by the Host field's rules
/// (`isHostByte`), and more: a userinfo (`user@`) is an error in an http(s) URI and an empty host
/// must be rejected (RFC 9110 §4.2.1, §4.2.4). Port digits are not checked here, as for Host.
private func validateAbsoluteFormAuthority(_ rest: UnsafeRawBufferPointer) throws(HTTPParseError) {
    var end = 0
    while end < rest.count && rest[end] != 0x2F && rest[end] != 0x3F { end += 1 }  // up to "/" or "?"
    var hostEnd = end  // the host ends at the port's colon (outside an IP-literal's brackets)
    var inBrackets = false
    for i in 0..<end {
        let b = rest[i]
        if b == 0x40 { throw .badRequest("userinfo in request target") }
        guard isHostByte(b) else { throw .badRequest("invalid authority in request target") }
        if b == 0x5B { inBrackets = true } else if b == 0x5D { inBrackets = false }
        if b == 0x3A && !inBrackets && hostEnd == end { hostEnd = i }
    }
    guard hostEnd > 0 else { throw .badRequest("empty host in request target") }
}

/// Calls `body` with each comma-separated element of a field value, OWS trimmed.
private func forEachListElement(_ value: UnsafeRawBufferPointer,
                                _ body: (UnsafeRawBufferPointer) throws(HTTPParseError) -> Void) throws(HTTPParseError) {
    var start = 0
    var i = 0
    while i <= value.count {
        if i == value.count || value[i] == 0x2C {
            var s = start, e = i
            while s < e && (value[s] == 0x20 || value[s] == 0x09) { s += 1 }
            while e > s && (value[e - 1] == 0x20 || value[e - 1] == 0x09) { e -= 1 }
            try body(UnsafeRawBufferPointer(rebasing: value[s..<e]))
            start = i + 1
        }
        i += 1
    }
}

private func forEachListElementNoThrow(_ value: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
    try? forEachListElement(value) { (element: UnsafeRawBufferPointer) throws(HTTPParseError) in body(element) }
}

/// The methods the parser tells apart (RFC 9110 §9 plus PATCH): CONNECT is refused (501) and only
/// OPTIONS may use the asterisk form. Any other token is an extension method, accepted as it is.
enum KnownMethod: Equatable {
    case get, head, post, put, delete, connect, options, trace, patch

    init?(_ bytes: UnsafeRawBufferPointer) {
        func eq(_ s: StaticString) -> Bool {
            s.utf8CodeUnitCount == bytes.count && memcmp(s.utf8Start, bytes.baseAddress!, bytes.count) == 0
        }
        switch bytes.count {
        case 3 where eq("GET"): self = .get
        case 3 where eq("PUT"): self = .put
        case 4 where eq("HEAD"): self = .head
        case 4 where eq("POST"): self = .post
        case 5 where eq("TRACE"): self = .trace
        case 5 where eq("PATCH"): self = .patch
        case 6 where eq("DELETE"): self = .delete
        case 7 where eq("CONNECT"): self = .connect
        case 7 where eq("OPTIONS"): self = .options
        default: return nil
        }
    }
}
