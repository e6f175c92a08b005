import DictionaryCodec
import DictionaryTransport
import HTTPClient
import HTTPCore
import HTTPServer
import HTTPTypes
import Logging
import Locking

/// One proxied exchange's response side: receives the upstream response from ``HTTPClient`` and
/// answers the client exactly once.
///
/// - Head with a body of known length ≤ `maxBufferedBodyBytes`, or a chunked/close-delimited body of a
///   transformable GET 200 (not `no-transform`, not `text/event-stream`): buffered, then answered as
///   bytes (decoded to identity when possible, see ``UpstreamBodyDecoder``). A chunked body that
///   outgrows the limit switches to streaming with what was buffered sent first.
/// - Anything else streams: the client's response is a `.stream` body; each upstream part is written
///   to it and the upstream is resumed only when the connection took the part (back-pressure). A
///   client that went away cancels the exchange (the upstream connection is closed, not pooled).
/// - A failure before the answer becomes 502/504 (``UpstreamFailure``); after a streamed head, the
///   client's response is aborted (its connection closes, the client sees a truncated body).
///
/// Thread-safety: the client calls the delegate methods in order on the exchange's loop; the stream
/// writer calls back on the connection's queue. All state is behind one `Locked`; callbacks into the
/// server and the client are made outside it.
final class ProxyResponseRelay: HTTPClientResponseDelegate, Sendable {
    /// What every exchange of one upstream shares, made once per handler: a relay holds one reference
    /// instead of copying the policy's strings and the logger's handler per request. Immutable.
    final class Settings: Sendable {
        let upstream: String
        let maxBufferedBodyBytes: Int
        let maxDecodedBodyBytes: Int
        let policy: ProxyHeaderPolicy
        let logger: Logger

        init(upstream: String, maxBufferedBodyBytes: Int, maxDecodedBodyBytes: Int, policy: ProxyHeaderPolicy, logger: Logger) {
            self.upstream = upstream
            self.maxBufferedBodyBytes = maxBufferedBodyBytes
            self.maxDecodedBodyBytes = maxDecodedBodyBytes
            self.policy = policy
            self.logger = logger
        }
    }

    private enum Phase {
        case waitingForHead
        case buffering
        case streaming
        case done
    }

    private struct State {
        var phase = Phase.waitingForHead
        /// The cleaned head while the body is buffered (a response without a body yet).
        var head: HTTPServerResponse?
        var buffer: [UInt8] = []
        var respond: (@Sendable (consuming HTTPServerResponse) -> Void)?
        var writer: (any ResponseBodyWriter)?
        /// Parts (and the upstream's resume) that arrived before the stream writer did.
        var pending: [(bytes: [UInt8], resume: (@Sendable () -> Void)?)] = []
        /// End of the upstream body seen while parts were pending: true = finished, false = failed.
        var ending: Bool?
        /// A part is with the connection and its `then` has not run yet.
        var writing = false
        var exchange: HTTPClientExchange?
        var cancelRequested = false

        /// The exchange is over for the relay: drops the references to the exchange (which holds this
        /// relay as its delegate: a cycle otherwise) and to the writer.
        mutating func end() {
            phase = .done
            exchange = nil
            writer = nil
        }
    }

    let request: HTTPRequest
    /// Where interim responses for the client go (nil: an HTTP/1.0 client, or none wanted).
    let interim: InterimResponseSender?
    let settings: Settings
    var upstream: String { settings.upstream }
    var logger: Logger { settings.logger }
    private let state: Locked<State>

    init(settings: Settings, request: HTTPRequest, interim: InterimResponseSender? = nil,
         respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        self.request = request
        self.interim = interim
        self.settings = settings
        var s = State()
        s.respond = respond
        state = Locked(s)
    }

    /// The exchange, once `execute` returned it (a cancel requested earlier is carried out now).
    func attach(_ exchange: HTTPClientExchange) {
        let cancel = state.withLock { s -> Bool in
            if s.phase != .done { s.exchange = exchange }
            return s.cancelRequested
        }
        if cancel { exchange.cancel() }
    }

    /// Takes the `respond` closure (nil when the client was already answered).
    private func takeRespond(_ s: inout State) -> (@Sendable (consuming HTTPServerResponse) -> Void)? {
        defer { s.respond = nil }
        return s.respond
    }

    // MARK: HTTPClientResponseDelegate

    /// A 1xx other than 100 and 101 (`103 Early Hints`, ...) goes on to the client ahead of the final
    /// response, cleaned like a final head (RFC 9110 §15.2); an HTTP/1.0 client has no `interim`
    /// sender and gets none. `100 Continue` stays here: dcserve answered the client's expectation itself.
    func didReceiveInformational(_ head: HTTPResponse) {
        guard let interim, InterimResponseSender.isSendable(head.status) else { return }
        interim.send(ProxyResponseHeaders.make(head, policy: settings.policy))
    }

    func didReceiveHead(parsed head: ParsedResponseHead) {
        // Via names the protocol the response was received with (RFC 9110 §7.6.3).
        let version = head.version == .http1_0 ? "1.0" : "1.1"
        let cleaned = ProxyResponseHeaders.forwarded(head, protocolVersion: version, policy: settings.policy)
        received(HTTPServerResponse(forwarded: cleaned), bodyLength: head.bodyLength) {
            Self.contentLength(head.values(of: "content-length"))
        }
    }

    func didReceiveHead(_ head: HTTPResponse, bodyLength: HTTPBodyLength) {
        received(HTTPServerResponse(head: ProxyResponseHeaders.make(head, policy: settings.policy)), bodyLength: bodyLength) {
            Self.contentLength(head.headerFields[values: .contentLength])
        }
    }

    /// The upstream's head without hop-by-hop fields (a response without a body yet);
    /// `upstreamContentLength` reads its `Content-Length` (asked only for HEAD).
    private func received(_ cleaned: consuming HTTPServerResponse, bodyLength: HTTPBodyLength, upstreamContentLength: () -> Int64?) {
        let buffer: Bool
        switch bodyLength {
        case .none:
            let respond = state.withLock { s in s.end(); return takeRespond(&s) }
            if request.method == .head {
                // The upstream's Content-Length (a framing field, dropped from `cleaned`) is the length
                // a GET would have: announced as it is. Without one (absent, invalid, or the upstream
                // answered HEAD as chunked) no length is announced: 0 would be a false one.
                cleaned.headLength = upstreamContentLength().map { .announced($0) } ?? .unannounced
            }
            respond?(cleaned)
            return
        case .known(let n):
            buffer = Int64(n) <= Int64(settings.maxBufferedBodyBytes)
        default:
            buffer = isTransformable(cleaned)
        }
        if buffer {
            var head: HTTPServerResponse? = consume cleaned  // moved into the state, not copied
            state.withLock { s in
                s.phase = .buffering
                s.head = head.take()
                if case .known(let n) = bodyLength { s.buffer.reserveCapacity(Int(n)) }
            }
        } else {
            startStreaming(cleaned.head)
        }
    }

    func didReceiveBodyPart(_ bytes: ArraySlice<UInt8>, resume: @escaping @Sendable () -> Void) {
        enum Next { case resume, stream(HTTPResponse), flush, drop }
        let next = state.withLock { s -> Next in
            switch s.phase {
            case .buffering:
                s.buffer.append(contentsOf: bytes)
                if s.buffer.count > settings.maxBufferedBodyBytes, let head = s.head { return .stream(head.head) }
                return .resume
            case .streaming:
                s.pending.append((Array(bytes), resume))
                return .flush
            case .waitingForHead, .done:
                return .drop
            }
        }
        switch next {
        case .resume: resume()
        case .stream(let head):
            startStreaming(head)  // the buffer goes first, then the upstream is resumed
            state.withLock { s in s.pending.append(([], resume)) }
            flushPending()
        case .flush: flushPending()
        case .drop: break
        }
    }

    func didFinish(trailers: HTTPFields?) {
        enum Next { case answer, flush, nothing }
        // The answer's head and body, taken out of the state: the response handed on is their only
        // reference, so the steps after this edit its storage in place instead of copying it. The
        // callback is taken in the same critical section, into a variable of its own type (returned
        // through `withLock`'s generic result it would be re-abstracted: a heap allocation).
        var head: HTTPServerResponse?
        var body: [UInt8] = []
        var respond: (@Sendable (consuming HTTPServerResponse) -> Void)?
        let next = state.withLock { s -> Next in
            switch s.phase {
            case .buffering:
                s.end()
                swap(&body, &s.buffer)
                head = s.head.take() ?? HTTPServerResponse(status: .badGateway)
                respond = takeRespond(&s)
                return .answer
            case .streaming:
                s.ending = true
                return .flush
            case .waitingForHead, .done:
                return .nothing
            }
        }
        switch next {
        case .answer:
            respond?(buffered(head.take()!, body))
        case .flush: flushPending()
        case .nothing: break
        }
    }

    func didFail(_ error: HTTPClientError) {
        if case .cancelled = error {
            // Either we cancelled (the client went away: nothing to answer), or the client's streamed
            // request body failed (closed, timed out, bad framing): answer, if the connection still can.
            enum Next { case answer((@Sendable (consuming HTTPServerResponse) -> Void)?), abort, nothing }
            let next = state.withLock { s -> Next in
                guard !s.cancelRequested else { return .nothing }
                switch s.phase {
                case .waitingForHead, .buffering:
                    s.end()
                    return .answer(takeRespond(&s))
                case .streaming:
                    s.ending = false
                    return .abort
                case .done:
                    return .nothing
                }
            }
            switch next {
            case .answer(let respond): respond?(.text(.badRequest, "400 Bad Request: the request body could not be read to its end"))
            case .abort: flushPending()
            case .nothing: break
            }
            return
        }
        let failure = UpstreamFailure(error, upstream: upstream)
        let answer = state.withLock { s -> Bool in
            switch s.phase {
            case .waitingForHead, .buffering:
                s.end()
                s.buffer = []
                return true
            case .streaming:
                s.ending = false
                return false
            case .done:
                return false
            }
        }
        logger.warning("upstream request failed", metadata: [
            "upstream": "\(upstream)", "reason": "\(failure.reason)", "method": "\(request.method)",
            "path": "\(request.path ?? "")", "answered": "\(answer ? String(failure.status.code) : "truncated")"])
        if answer {
            let respond = state.withLock { takeRespond(&$0) }
            respond?(failure.response)
        } else {
            flushPending()
        }
    }

    /// A single, valid `Content-Length` value (several equal lines count as one), else nil.
    static func contentLength(_ values: [String]) -> Int64? {
        var length: Int64?
        for value in values {
            for digits in value.fieldMembers(separatedBy: ",", omittingEmpty: false) {
                guard !digits.isEmpty, digits.utf8.count <= 18, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                      let n = Int64(digits), length == nil || length == n else { return nil }
                length = n
            }
        }
        return length
    }

    // MARK: Buffered answers

    /// Whether the compression middleware may transform this response (so buffering it is useful).
    private func isTransformable(_ head: HTTPServerResponse) -> Bool {
        guard request.method == .get, head.statusCode == 200 else { return false }
        guard let forwarded = head.forwarded else {
            return !ProxyResponseHeaders.forbidsTransform(head.head.headerFields) && !Self.isEventStream(head.head.headerFields)
        }
        // The same questions on the received bytes, in one pass (no strings for the usual head).
        var transformable = true, sawType = false
        forwarded.forEachKeptField { name, value in
            switch name.count {
            case 13 where asciiCaseInsensitiveEquals(name, "cache-control"):
                if ProxyResponseHeaders.forbidsTransform(cacheControl: String(decoding: value, as: UTF8.self)) { transformable = false }
            case 12 where !sawType && asciiCaseInsensitiveEquals(name, "content-type"):
                sawType = true
                if Self.isEventStream(contentType: value) { transformable = false }
            default:
                break
            }
        }
        guard transformable, !ProxyResponseHeaders.forbidsTransform(forwarded.appended) else { return false }
        return sawType || !Self.isEventStream(forwarded.appended)
    }

    /// Whether the (first) `Content-Type` is `text/event-stream` (any case, any parameters): the
    /// check `fields[.contentType]?.lowercased().hasPrefix("text/event-stream")` without building strings.
    static func isEventStream(_ fields: HTTPFields) -> Bool {
        guard var value = fields.first(where: { $0.name == .contentType })?.value else { return false }
        return value.withUTF8 { isEventStream(contentType: $0) }
    }

    /// Whether a `Content-Type` value (bytes) names `text/event-stream`, in any case, with any parameters.
    static func isEventStream(contentType value: UnsafeBufferPointer<UInt8>) -> Bool {
        let prefix: StaticString = "text/event-stream"
        return value.count >= prefix.utf8CodeUnitCount
            && asciiCaseInsensitiveEquals(UnsafeBufferPointer(rebasing: value[..<prefix.utf8CodeUnitCount]), prefix)
    }

    private func buffered(_ cleaned: consuming HTTPServerResponse, _ body: [UInt8]) -> HTTPServerResponse {
        cleaned.body = .bytes(body)
        // Without Content-Encoding there is nothing to decode: the head passes as it is (forwarded).
        guard isTransformable(cleaned), cleaned.hasHeader(.contentEncoding) else { return cleaned }
        let head = cleaned.head
        switch UpstreamBodyDecoder.decode(head.headerFields, body: body, maxDecodedBytes: settings.maxDecodedBodyBytes) {
        case .unchanged:
            return HTTPServerResponse(head: head, body: .bytes(body))
        case .decoded(let fields, let identity):
            var decoded = head
            decoded.headerFields = fields
            return HTTPServerResponse(head: decoded, body: .bytes(identity))
        case .failed(let reason, let coding, let tooLarge):
            // dcserve asked the upstream for codings it decodes: a coding this client does not accept is
            // never passed on (RFC 9110 §12.5.3). Too large to hold decoded: decoded as it is sent.
            // Corrupt: the upstream's response is invalid (502).
            let accepted = AcceptEncoding(request.headerFields).accepts(coding)
            logger.warning("upstream body not decoded", metadata: [
                "upstream": "\(upstream)", "reason": "\(reason)", "path": "\(request.path ?? "")",
                "answered": "\(accepted ? "as sent" : tooLarge ? "decoded while sent" : "502")"])
            if accepted { return HTTPServerResponse(head: head, body: .bytes(body)) }
            guard tooLarge else {
                return .text(.badGateway, "502 Bad Gateway: the upstream's \(coding.rawValue) body could not be decoded")
            }
            var decoded = head
            decoded.headerFields = UpstreamBodyDecoder.identityFields(head.headerFields)
            return HTTPServerResponse(head: decoded, body: .stream(StreamingDecodedBody.decoding(body, coding: coding)))
        }
    }

    /// For a streamed head in a coding the client does not accept (one dcserve decodes, and the upstream
    /// allows transforming): the identity head and the coding to decode the stream from; else nil.
    private func decodingForClient(_ head: HTTPResponse) -> (HTTPResponse, ContentCoding)? {
        guard request.method != .head, head.headerFields[.contentEncoding] != nil,
              let coding = UpstreamBodyDecoder.decodableCoding(head.headerFields),
              !AcceptEncoding(request.headerFields).accepts(coding) else { return nil }
        var decoded = head
        decoded.headerFields = UpstreamBodyDecoder.identityFields(head.headerFields)
        return (decoded, coding)
    }

    // MARK: Streaming

    /// Answers the client with a stream body; what was buffered so far is written first.
    private func startStreaming(_ head: HTTPResponse) {
        let respond = state.withLock { s -> (@Sendable (consuming HTTPServerResponse) -> Void)? in
            s.phase = .streaming
            if !s.buffer.isEmpty {
                s.pending.insert((s.buffer, nil), at: 0)
                s.buffer = []
            }
            return takeRespond(&s)
        }
        var body = StreamBody { [self] writer in
            state.withLock { $0.writer = writer }
            flushPending()
        }
        var head = head
        if let (decoded, coding) = decodingForClient(head) {
            head = decoded
            body = StreamingDecodedBody.wrap(body, coding: coding)
        }
        respond?(HTTPServerResponse(head: head, body: .stream(body)))
    }

    /// Writes the pending parts in order, one at a time (each after the connection took the previous
    /// one, then the upstream is resumed), then carries out a finish or failure that arrived meanwhile.
    private func flushPending() {
        enum Next { case write(any ResponseBodyWriter, [UInt8], (@Sendable () -> Void)?), finish(any ResponseBodyWriter),
                    abort(any ResponseBodyWriter), nothing }
        let next = state.withLock { s -> Next in
            guard s.phase == .streaming, let writer = s.writer, !s.writing else { return .nothing }
            if !s.pending.isEmpty {
                s.writing = true
                let part = s.pending.removeFirst()
                return .write(writer, part.bytes, part.resume)
            }
            guard let ending = s.ending else { return .nothing }
            s.end()
            return ending ? .finish(writer) : .abort(writer)
        }
        switch next {
        case .write(let writer, let bytes, let resume):
            write(bytes, to: writer) { [self] in
                state.withLock { $0.writing = false }
                resume?()
                flushPending()
            }
        case .finish(let writer): writer.finish()
        case .abort(let writer): writer.abort()
        case .nothing: break
        }
    }

    /// Writes `bytes`; once the connection took them, `then` runs — unless the client went away,
    /// in which case the upstream exchange is cancelled instead.
    private func write(_ bytes: [UInt8], to writer: any ResponseBodyWriter, then: @escaping @Sendable () -> Void) {
        let taken: @Sendable () -> Void = { [self] in
            if writer.isCancelled {
                let exchange = state.withLock { s -> HTTPClientExchange? in
                    let exchange = s.exchange
                    s.end()
                    s.pending = []
                    s.cancelRequested = true
                    return exchange
                }
                exchange?.cancel()
            } else {
                then()
            }
        }
        if bytes.isEmpty { taken() } else { writer.write(bytes, then: taken) }
    }
}
