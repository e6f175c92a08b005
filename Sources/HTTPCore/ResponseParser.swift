/// Incremental, strict HTTP/1.1 response parser (RFC 9112) for the upstream client, allocation-light.
///
/// Usage: call `expectResponse(toHEAD:)` before each exchange's response (a fresh parser expects a
/// response to a non-HEAD request). Then feed it the unconsumed input; each call returns how many bytes
/// it consumed and ONE event. Bytes it did not consume must be passed again at the start of the next
/// call, followed by whatever arrives next: the parser remembers how far it scanned, so a response
/// split at every byte boundary costs linear time. Events of one exchange, in order:
/// `.informational` (zero or more 1xx heads), `.head`, `.body` (zero or more), `.end`.
/// `.needMoreData` means the bytes after `consumed` cannot make progress without more input.
/// `.body(range)` names bytes of the buffer given to THAT call (counted in `consumed`): the caller
/// delivers or copies them before it drops them — bodies stream, the parser never accumulates them.
/// When the input ends (EOF), call `endOfInput()`: it completes a close-delimited body or throws
/// `.truncated`.
///
/// Framing (RFC 9112 §6.3), in this order: a response to HEAD, any 1xx, 204 and 304 have no body;
/// `101 Switching Protocols` is refused unless the request asked for an upgrade (then it is the
/// final head and parsing stops after it, see `expectResponse`); `Transfer-Encoding`
/// whose final coding is `chunked` → chunked (extensions ignored, trailers parsed); any other
/// `Transfer-Encoding` → until close; else `Content-Length` → that many bytes; else until close.
/// Smuggling-shaped input is an error, never a guess: both `Content-Length` and `Transfer-Encoding`
/// (our call: RFC 9112 §6.3 allows treating it as an error, and a proxy must not reuse such a
/// connection anyway), `Transfer-Encoding` in an HTTP/1.0 response, `chunked` applied twice,
/// `Content-Length` values that differ (identical repeats, in one list or several lines, are one
/// value — RFC 9110 §5.3, §8.6), bad or overflowing sizes, bare LF or CR, obs-fold, whitespace before
/// a colon, control characters (NUL included) in field values or the reason phrase.
///
/// After it throws, the stream is unusable: close the connection. Plain value type with no
/// references to the input; not thread-safe (one upstream connection owns one).
public struct ResponseParser {
    public enum Event {
        /// More input is needed for the next event.
        case needMoreData
        /// An interim 1xx response (100 Continue, 103 Early Hints, ...); the final head follows.
        case informational(ParsedResponseHead)
        /// The final response head; `head.bodyLength` says what follows.
        case head(ParsedResponseHead)
        /// Body bytes: this range of the buffer given to this call (already de-chunked; it ends at
        /// `consumed`, and may start after framing bytes).
        case body(Range<Int>)
        /// The response is complete; `trailers` holds the trailer fields of a chunked body.
        case end(trailers: [(name: String, value: String)])
    }

    private enum State: Equatable {
        case head
        case noBody
        case fixedBody(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers
        case untilClose
        case complete
    }

    public let limits: ResponseParserLimits
    private var state: State = .head
    private var requestWasHEAD = false
    private var upgradeRequested = false
    private var informationalCount = 0

    // Head scanning, offsets relative to the first unconsumed byte (the head's first byte).
    private var scanned = 0
    private var lineStart = 0
    private var statusLineDone = false
    private var version = HTTPVersion.http1_1
    private var status = 0
    private var reasonRange = 0..<0
    private var fieldRanges: [(name: Range<Int>, value: Range<Int>)] = []

    // Framing facts collected from the header fields.
    private var contentLength: Int?
    private var transferCodings: [[UInt8]] = []
    private var hasTransferEncoding = false
    private var connectionClose = false
    private var connectionKeepAlive = false

    private var trailers: [(name: String, value: String)] = []
    private var trailerBytes = 0

    public init(limits: ResponseParserLimits = ResponseParserLimits()) {
        self.limits = limits
        fieldRanges.reserveCapacity(16)
    }

    /// Prepares for the response to the next request; `toHEAD` when that request's method is HEAD.
    /// Call only when no response is in progress (fresh, or after `.end`).
    /// `upgradeRequested`: the request asked to switch protocols, so `101 Switching Protocols` is
    /// its final head (`.head`, no body) and parsing ends there (`isComplete`): what follows is the
    /// new protocol's. Otherwise a `101` is an error.
    public mutating func expectResponse(toHEAD: Bool, upgradeRequested: Bool = false) {
        resetHead()
        state = .head
        requestWasHEAD = toHEAD
        self.upgradeRequested = upgradeRequested
        informationalCount = 0
    }

    /// True after `.end` (until `expectResponse`).
    public var isComplete: Bool { state == .complete }

    /// True when no byte of the response has been seen yet (not even of a 1xx head).
    public var hasNotStarted: Bool { state == .head && scanned == 0 && informationalCount == 0 }

    /// Parses as much of `buffer` as the next event needs. See the type's documentation.
    public mutating func parse(_ buffer: UnsafeRawBufferPointer) throws(ResponseParseError) -> (consumed: Int, event: Event) {
        switch state {
        case .complete:
            return (0, .needMoreData)
        case .head:
            guard let headEnd = try scanHead(buffer) else { return (0, .needMoreData) }
            let head = try finishHead(buffer, headEnd: headEnd)
            return (headEnd, head.isInformational && head.status != 101 ? .informational(head) : .head(head))
        case .noBody:
            return (0, finish())
        case .untilClose:
            guard !buffer.isEmpty else { return (0, .needMoreData) }
            return (buffer.count, .body(0..<buffer.count))
        case .fixedBody(let remaining):
            guard !buffer.isEmpty else { return (0, .needMoreData) }
            let n = min(remaining, buffer.count)
            state = remaining == n ? .noBody : .fixedBody(remaining: remaining - n)
            return (n, .body(0..<n))
        case .chunkData(let remaining):
            guard !buffer.isEmpty else { return (0, .needMoreData) }
            let n = min(remaining, buffer.count)
            state = remaining == n ? .chunkDataEnd : .chunkData(remaining: remaining - n)
            return (n, .body(0..<n))
        case .chunkSize, .chunkDataEnd, .trailers:
            return try parseChunkFraming(buffer)
        }
    }

    /// The input ended (the upstream closed its side). Returns `.end` when the body was
    /// close-delimited; throws `.truncated` when a response was in progress (or none had started).
    public mutating func endOfInput() throws(ResponseParseError) -> Event {
        switch state {
        case .untilClose, .noBody:
            return finish()
        case .complete:
            return .needMoreData
        case .head:
            throw .truncated(hasNotStarted ? "connection closed before a response" : "connection closed in the response head")
        default:
            throw .truncated("connection closed in the response body")
        }
    }

    // MARK: Chunked framing

    /// Chunk-size lines, the CRLF after chunk data, and the trailer section. Loops over framing bytes
    /// until it has an event (data, end) or needs more input.
    private mutating func parseChunkFraming(_ buffer: UnsafeRawBufferPointer) throws(ResponseParseError) -> (consumed: Int, event: Event) {
        var pos = 0
        while true {
            switch state {
            case .chunkSize:
                guard let lineEnd = try scanLine(buffer, from: pos, limit: limits.maxChunkLineBytes,
                                                 error: .tooLarge("chunk-size line too long")) else {
                    return (pos, .needMoreData)
                }
                let line = UnsafeRawBufferPointer(rebasing: buffer[pos..<lineEnd - 2])
                pos = lineEnd
                switch ChunkedCoding.parseSizeLine(line) {
                case .size(0):
                    state = .trailers
                    trailerBytes = 0
                case .size(let size):
                    let n = min(size, buffer.count - pos)
                    guard n > 0 else {
                        state = .chunkData(remaining: size)
                        return (pos, .needMoreData)
                    }
                    state = n == size ? .chunkDataEnd : .chunkData(remaining: size - n)
                    return (pos + n, .body(pos..<pos + n))
                case .tooLarge: throw .tooLarge("chunk size does not fit")
                case .invalidSize: throw .malformed("invalid chunk size")
                case .invalidExtension: throw .malformed("invalid chunk extension")
                }
            case .chunkDataEnd:
                let available = buffer.count - pos
                guard available >= 2 else {
                    if available == 1 && buffer[pos] != 0x0D { throw .malformed("chunk data not followed by CRLF") }
                    return (pos, .needMoreData)
                }
                guard buffer[pos] == 0x0D && buffer[pos + 1] == 0x0A else {
                    throw .malformed("chunk data not followed by CRLF")
                }
                pos += 2
                state = .chunkSize
            case .trailers:
                guard let lineEnd = try scanLine(buffer, from: pos, limit: limits.maxHeaderBytes,
                                                 error: .tooLarge("trailer section too large")) else {
                    return (pos, .needMoreData)
                }
                trailerBytes += lineEnd - pos
                guard trailerBytes <= limits.maxHeaderBytes else { throw .tooLarge("trailer section too large") }
                if lineEnd - pos == 2 {
                    pos = lineEnd
                    return (pos, finish())
                }
                guard trailers.count < limits.maxHeaderCount else { throw .tooLarge("too many trailer fields") }
                let (name, value) = try parseFieldLine(buffer, pos..<lineEnd - 2)
                trailers.append((String(decoding: UnsafeRawBufferPointer(rebasing: buffer[name]), as: UTF8.self),
                                 String(decoding: UnsafeRawBufferPointer(rebasing: buffer[value]), as: UTF8.self)))
                pos = lineEnd
            default:
                return (pos, .needMoreData)
            }
        }
    }

    private mutating func finish() -> Event {
        let event = Event.end(trailers: trailers)
        trailers = []
        state = .complete
        return event
    }

    // MARK: Lines

    /// Finds the CRLF ending the line that starts at `from`; returns the index after the LF, or nil
    /// when more bytes are needed. Remembers how far it looked in `scanned` (relative to `from`).
    private mutating func scanLine(_ buffer: UnsafeRawBufferPointer, from: Int, limit: Int,
                                   error: ResponseParseError) throws(ResponseParseError) -> Int? {
        if let lf = HTTPFieldSyntax.findLF(buffer, from: from + scanned) {
            scanned = 0
            guard lf > from, buffer[lf - 1] == 0x0D else { throw .malformed("bare LF in line") }
            if lf - 1 - from > limit { throw error }
            if HTTPFieldSyntax.containsCR(buffer, from..<lf - 1) { throw .malformed("bare CR in line") }
            return lf + 1
        }
        scanned = buffer.count - from
        if scanned > limit + 1 { throw error }
        return nil
    }

    // MARK: Head

    /// Scans head lines; returns the offset just past the empty line ending the head, or nil.
    private mutating func scanHead(_ buffer: UnsafeRawBufferPointer) throws(ResponseParseError) -> Int? {
        while true {
            guard let lf = HTTPFieldSyntax.findLF(buffer, from: scanned) else {
                scanned = buffer.count
                if !statusLineDone && buffer.count - lineStart > limits.maxStatusLineBytes + 1 {
                    throw .tooLarge("status line too long")
                }
                if buffer.count > limits.maxHeaderBytes + 1 { throw .tooLarge("header section too large") }
                // Fail early on a stream that cannot be a response (garbage, another protocol).
                if !statusLineDone { try checkStatusLinePrefix(buffer, upTo: buffer.count) }
                return nil
            }
            guard lf > lineStart, buffer[lf - 1] == 0x0D else { throw .malformed("bare LF in response head") }
            let line = lineStart..<(lf - 1)
            scanned = lf + 1
            if HTTPFieldSyntax.containsCR(buffer, line) { throw .malformed("bare CR in response head") }
            if !statusLineDone {
                if line.count > limits.maxStatusLineBytes { throw .tooLarge("status line too long") }
                try parseStatusLine(buffer, line)
                statusLineDone = true
            } else if line.isEmpty {
                if scanned > limits.maxHeaderBytes { throw .tooLarge("header section too large") }
                return scanned
            } else {
                guard fieldRanges.count < limits.maxHeaderCount else { throw .tooLarge("too many header fields") }
                let (name, value) = try parseFieldLine(buffer, line)
                fieldRanges.append((name, value))
                try interpretField(buffer, name: name, value: value)
            }
            if scanned > limits.maxHeaderBytes { throw .tooLarge("header section too large") }
            lineStart = scanned
        }
    }

    /// Rejects a partial first line that already differs from `HTTP/`.
    private func checkStatusLinePrefix(_ buffer: UnsafeRawBufferPointer, upTo end: Int) throws(ResponseParseError) {
        let prefix: StaticString = "HTTP/"
        let n = min(end, prefix.utf8CodeUnitCount)
        for i in 0..<n where buffer[i] != prefix.utf8Start[i] {
            throw .malformed("not an HTTP/1.x status line")
        }
    }

    /// status-line = HTTP-version SP status-code SP [ reason-phrase ]. A missing SP after the code
    /// with an empty reason is accepted (common, harmless); the reason is otherwise ignored but must
    /// not hold control characters.
    private mutating func parseStatusLine(_ buffer: UnsafeRawBufferPointer, _ line: Range<Int>) throws(ResponseParseError) {
        let s = line.lowerBound
        try checkStatusLinePrefix(UnsafeRawBufferPointer(rebasing: buffer[line]), upTo: line.count)
        guard line.count >= 12, HTTPFieldSyntax.isDigit(buffer[s + 5]), buffer[s + 6] == 0x2E,
              HTTPFieldSyntax.isDigit(buffer[s + 7]), buffer[s + 8] == 0x20 else {
            throw .malformed("malformed status line")
        }
        let major = Int(buffer[s + 5] - 0x30), minor = Int(buffer[s + 7] - 0x30)
        guard major == 1 else { throw .unsupported("HTTP version \(major).\(minor) not supported") }
        version = minor == 0 ? .http1_0 : .http1_1
        let d0 = buffer[s + 9], d1 = buffer[s + 10], d2 = buffer[s + 11]
        guard HTTPFieldSyntax.isDigit(d0), HTTPFieldSyntax.isDigit(d1), HTTPFieldSyntax.isDigit(d2) else {
            throw .malformed("malformed status code")
        }
        status = Int(d0 - 0x30) * 100 + Int(d1 - 0x30) * 10 + Int(d2 - 0x30)
        guard status >= 100 && status <= 599 else { throw .malformed("status code \(status) out of range") }
        if line.count == 12 {
            reasonRange = line.upperBound..<line.upperBound
            return
        }
        guard buffer[s + 12] == 0x20 else { throw .malformed("malformed status line") }
        for i in (s + 13)..<line.upperBound where HTTPFieldSyntax.isForbiddenControl(buffer[i]) {
            throw .malformed("control character in reason phrase")
        }
        reasonRange = (s + 13)..<line.upperBound
    }

    /// Parses `name ":" OWS value OWS`; returns the name and trimmed value ranges.
    private func parseFieldLine(_ buffer: UnsafeRawBufferPointer, _ line: Range<Int>) throws(ResponseParseError) -> (Range<Int>, Range<Int>) {
        let first = buffer[line.lowerBound]
        if first == 0x20 || first == 0x09 { throw .malformed("obsolete line folding") }
        var i = line.lowerBound
        while i < line.upperBound && HTTPFieldSyntax.isTokenByte(buffer[i]) { i += 1 }
        guard i < line.upperBound else { throw .malformed("header field without colon") }
        let c = buffer[i]
        if c == 0x20 || c == 0x09 { throw .malformed("whitespace before colon in header field") }
        guard c == 0x3A, i > line.lowerBound else { throw .malformed("malformed header field name") }
        let name = line.lowerBound..<i
        i += 1
        while i < line.upperBound && (buffer[i] == 0x20 || buffer[i] == 0x09) { i += 1 }
        var end = line.upperBound
        while end > i && (buffer[end - 1] == 0x20 || buffer[end - 1] == 0x09) { end -= 1 }
        for j in i..<end where HTTPFieldSyntax.isForbiddenControl(buffer[j]) {
            throw .malformed("invalid character in header field value")
        }
        return (name, i..<end)
    }

    private static let tokenChunked: [UInt8] = Array("chunked".utf8)

    private mutating func interpretField(_ buffer: UnsafeRawBufferPointer, name: Range<Int>, value: Range<Int>) throws(ResponseParseError) {
        let n = UnsafeRawBufferPointer(rebasing: buffer[name])
        let v = UnsafeRawBufferPointer(rebasing: buffer[value])
        switch name.count {
        case 14 where asciiCaseInsensitiveEquals(n, "content-length"):
            try HTTPFieldSyntax.forEachListElement(v) { (element: UnsafeRawBufferPointer) throws(ResponseParseError) in
                guard !element.isEmpty else { throw .malformed("invalid Content-Length") }
                var length = 0
                for b in element {
                    guard HTTPFieldSyntax.isDigit(b) else { throw .malformed("invalid Content-Length") }
                    let (m, o1) = length.multipliedReportingOverflow(by: 10)
                    let (s, o2) = m.addingReportingOverflow(Int(b - 0x30))
                    guard !o1 && !o2 else { throw .tooLarge("Content-Length does not fit") }
                    length = s
                }
                if let existing = contentLength, existing != length {
                    throw .malformed("conflicting Content-Length values")
                }
                contentLength = length
            }
        case 17 where asciiCaseInsensitiveEquals(n, "transfer-encoding"):
            hasTransferEncoding = true
            HTTPFieldSyntax.forEachListElement(v) { element in
                if !element.isEmpty { transferCodings.append(element.map { ($0 >= 0x41 && $0 <= 0x5A) ? $0 | 0x20 : $0 }) }
            }
        case 10 where asciiCaseInsensitiveEquals(n, "connection"):
            HTTPFieldSyntax.forEachListElement(v) { element in
                if asciiCaseInsensitiveEquals(element, "close") { connectionClose = true }
                if asciiCaseInsensitiveEquals(element, "keep-alive") { connectionKeepAlive = true }
            }
        default:
            break
        }
    }

    /// Applies the framing rules once the whole head is known; returns the head and sets up what follows.
    private mutating func finishHead(_ buffer: UnsafeRawBufferPointer, headEnd: Int) throws(ResponseParseError) -> ParsedResponseHead {
        if hasTransferEncoding {
            if version == .http1_0 { throw .malformed("Transfer-Encoding in an HTTP/1.0 response") }
            if contentLength != nil { throw .malformed("both Content-Length and Transfer-Encoding") }
            if transferCodings.isEmpty { throw .malformed("empty Transfer-Encoding") }
            if transferCodings.lazy.filter({ $0 == Self.tokenChunked }).count > 1 {
                throw .malformed("chunked applied more than once")
            }
        }
        let bodyLength: HTTPBodyLength
        if status < 200 {
            if status == 101 && !upgradeRequested { throw .unsupported("101 Switching Protocols without an upgrade request") }
            informationalCount += 1
            guard informationalCount <= limits.maxInformationalResponses else { throw .tooLarge("too many 1xx responses") }
            bodyLength = .none
        } else if requestWasHEAD || status == 204 || status == 304 {
            bodyLength = .none
        } else if hasTransferEncoding {
            bodyLength = transferCodings.last == Self.tokenChunked ? .chunked : .untilClose
        } else if let length = contentLength {
            bodyLength = .known(length)
        } else {
            bodyLength = .untilClose
        }
        let persistent = version == .http1_1 ? !connectionClose : (connectionKeepAlive && !connectionClose)
        let head = ParsedResponseHead(
            headBytes: Array(UnsafeRawBufferPointer(rebasing: buffer[0..<headEnd])),
            version: version, status: status, reasonRange: reasonRange, fieldRanges: fieldRanges,
            bodyLength: bodyLength, keepAlive: persistent && bodyLength != .untilClose,
            transferCodings: transferCodings)
        let interim = status < 200, switched = status == 101
        resetHead()
        switch bodyLength {
        case .none: state = switched ? .complete : interim ? .head : .noBody
        case .known(0): state = .noBody
        case .known(let n): state = .fixedBody(remaining: n)
        case .chunked: state = .chunkSize
        case .untilClose: state = .untilClose
        }
        return head
    }

    private mutating func resetHead() {
        scanned = 0
        lineStart = 0
        statusLineDone = false
        status = 0
        reasonRange = 0..<0
        fieldRanges.removeAll(keepingCapacity: true)
        contentLength = nil
        transferCodings.removeAll()
        hasTransferEncoding = false
        connectionClose = false
        connectionKeepAlive = false
        trailers = []
        trailerBytes = 0
    }
}
