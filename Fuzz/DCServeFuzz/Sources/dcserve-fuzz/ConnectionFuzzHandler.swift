#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPCore
@testable import HTTPServer
import HTTPTypes

// The handler of the `connection` fuzz mode and what it leaves for the script to do later: it answers
// in every way the server's handlers answer, chosen by the first letter of the request path:
//
//   /f…  fixed bytes at once          /h…  a range of a file at once
//   /s…  a streamed body (the script writes, finishes or aborts it)
//   /b…  reads the request body in pieces when the script says (streamed bodies), answers when told
//   /l…  answers late, from the script's thread (a proxied answer after the client may have left)
//   /i…  sends a 103 interim response when told, answers late
//   /u…  101 Switching Protocols, taking the connection over (a tunnel)
//   else a small fixed answer at once
//
// The second path character picks a size (`ConnectionFuzzBodies.size`). Every answer carries
// `x-seq: N`, N counting the handler's calls, so the checker can tie bytes on the wire to requests.

/// Deterministic bodies and sizes, known to both the handler and the checker.
enum ConnectionFuzzBodies {
    static let sizes = [0, 1, 10, 100, 1000, 20_000, 70_000, 300_000]

    static func size(_ selector: UInt8) -> Int { sizes[Int(selector) % sizes.count] }

    static func fixed(seq: Int, size: Int) -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: seq &* 31 &+ $0 &* 7) }
    }

    static func chunk(seq: Int, index: Int, size: Int) -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: seq &* 13 &+ index &* 101 &+ $0) }
    }

    /// The file `/h` answers from: 300,000 bytes, made once per process.
    static let file: (path: String, bytes: [UInt8]) = {
        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        let path = NSTemporaryDirectory() + "/dcserve-connection-fuzz-\(getpid()).bin"
        precondition(FileManager.default.createFile(atPath: path, contents: Data(bytes)), "cannot write \(path)")
        atexit { unlink(NSTemporaryDirectory() + "/dcserve-connection-fuzz-\(getpid()).bin") }
        return (path, bytes)
    }()

    static func fileRange(_ selector: UInt8) -> Range<Int> {
        let start = Int(selector) * 13 % 1000
        return start..<min(file.bytes.count, start + size(selector))
    }
}

/// What one script run's handler was asked and what it still owes. Thread-safety: all state behind
/// one lock; the handler runs on the connection's queue, the script on its own thread, stream
/// producers on Dispatch's global queues. Callbacks into the server are made outside the lock.
final class ConnectionFuzzWorld: @unchecked Sendable {
    struct Request {
        var method: String
        var mode: UInt8
        var sizeSelector: UInt8
        var version: HTTPVersion
    }

    final class Stream: @unchecked Sendable {
        let seq: Int
        let writer: ResponseBodyWriter
        /// Guarded by the world's lock.
        var ready = true
        var chunks: [[UInt8]] = []
        var finished = false
        init(seq: Int, writer: ResponseBodyWriter) { self.seq = seq; self.writer = writer }
    }

    final class BodyReader: @unchecked Sendable {
        let seq: Int
        let stream: RequestBodyStream?
        let body: [UInt8]
        let respond: @Sendable (HTTPServerResponse) -> Void
        /// Guarded by the world's lock.
        var reading = false
        var received = 0
        var ended = false
        var responded = false
        init(seq: Int, stream: RequestBodyStream?, body: [UInt8], respond: @escaping @Sendable (HTTPServerResponse) -> Void) {
            (self.seq, self.stream, self.body, self.respond) = (seq, stream, body, respond)
        }
    }

    struct Late {
        var seq: Int
        var respond: @Sendable (HTTPServerResponse) -> Void
        var interim: InterimResponseSender?
        var responded = false
    }

    private let lock = NSLock()
    private(set) var requests: [Request] = []
    private var streams: [Stream] = []
    private var bodyReaders: [BodyReader] = []
    private var lates: [Late] = []
    private var detached: [DetachedConnection] = []
    /// Streamed answers whose producer has not been called yet.
    private var pendingProducers = 0
    /// Signalled by each stream producer's call (the script waits for them without polling).
    let producerCalled = DispatchSemaphore(value: 0)
    /// Counts every callback the server made (a change means the run is not quiet yet).
    private var callbacks = 0
    /// A broken contract seen in a callback (the checker reports it).
    private(set) var violation: String?

    func locked<T>(_ body: () -> T) -> T { lock.lock(); defer { lock.unlock() }; return body() }

    var callbackCount: Int { locked { callbacks } }
    var producersPending: Bool { locked { pendingProducers > 0 } }
    func request(_ seq: Int) -> Request? { locked { seq < requests.count ? requests[seq] : nil } }
    func streamChunks(_ seq: Int) -> [[UInt8]]? { locked { streams.first { $0.seq == seq }?.chunks } }
    var switched: Bool { locked { !detached.isEmpty } }

    private func fail(_ text: String) { locked { if violation == nil { violation = text } } }

    static let seqField = HTTPField.Name("x-seq")!

    func response(_ seq: Int, status: HTTPResponse.Status = .ok, body: ResponseBody) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headerFields: [Self.seqField: String(seq)], body: body)
    }

    // MARK: The handler's side (on the connection's queue)

    func handle(_ request: HTTPServerRequest, respond: @escaping @Sendable (HTTPServerResponse) -> Void) {
        let path = Array(request.pathWithoutQuery.utf8)
        let mode = path.count > 1 ? path[1] : 0
        let selector = path.count > 2 ? path[2] : 0
        let seq = locked {
            callbacks += 1
            requests.append(Request(method: request.head.method.rawValue, mode: mode, sizeSelector: selector, version: request.version))
            return requests.count - 1
        }
        switch mode {
        case UInt8(ascii: "f"):
            respond(response(seq, body: .bytes(ConnectionFuzzBodies.fixed(seq: seq, size: ConnectionFuzzBodies.size(selector)))))
        case UInt8(ascii: "h"):
            let range = ConnectionFuzzBodies.fileRange(selector)
            do {
                let file = try OpenFile(path: ConnectionFuzzBodies.file.path)
                respond(response(seq, body: .file(FileBody(file: file, range: Int64(range.lowerBound)..<Int64(range.upperBound)))))
            } catch {
                fatalError("cannot open the fuzz file: \(error)")
            }
        case UInt8(ascii: "s"):
            locked { pendingProducers += 1 }
            respond(response(seq, body: .stream(StreamBody { [self] writer in
                locked {
                    pendingProducers -= 1
                    callbacks += 1
                    streams.append(Stream(seq: seq, writer: writer))
                }
                producerCalled.signal()
            })))
        case UInt8(ascii: "b"):
            locked { bodyReaders.append(BodyReader(seq: seq, stream: request.bodyStream, body: request.body, respond: respond)) }
        case UInt8(ascii: "l"), UInt8(ascii: "i"):
            locked { lates.append(Late(seq: seq, respond: respond, interim: mode == UInt8(ascii: "i") ? request.interim : nil)) }
        case UInt8(ascii: "u"):
            var answer = response(seq, status: .switchingProtocols, body: .empty)
            answer.head.headerFields[.upgrade] = "fuzz"
            answer.switchProtocols = { [self] connection in
                locked {
                    callbacks += 1
                    detached.append(connection)
                }
            }
            respond(answer)
        default:
            respond(response(seq, body: .bytes(Array("seq \(seq)".utf8))))
        }
    }

    // MARK: The script's side (its own thread)

    /// Writes a chunk on the `pick`-th stream whose last write was acknowledged.
    func streamWrite(pick: UInt8, size: Int) {
        let chosen: (Stream, [UInt8])? = locked {
            let open = streams.filter { $0.ready && !$0.finished }
            guard !open.isEmpty else { return nil }
            let s = open[Int(pick) % open.count]
            let chunk = ConnectionFuzzBodies.chunk(seq: s.seq, index: s.chunks.count, size: size)
            s.ready = false
            s.chunks.append(chunk)
            return (s, chunk)
        }
        guard let (s, chunk) = chosen else { return }
        s.writer.write(chunk) { [self] in
            locked {
                callbacks += 1
                if s.ready, violation == nil { violation = "a stream write acknowledged twice" }
                s.ready = true
            }
        }
    }

    /// Finishes (or aborts) the `pick`-th unfinished stream; `onlyAcknowledged`: one with no write
    /// outstanding.
    func streamEnd(pick: UInt8, abort: Bool, onlyAcknowledged: Bool) {
        let chosen: Stream? = locked {
            let open = streams.filter { !$0.finished && (!onlyAcknowledged || $0.ready) }
            guard !open.isEmpty else { return nil }
            let s = open[Int(pick) % open.count]
            s.finished = true
            return s
        }
        guard let s = chosen else { return }
        if abort { s.writer.abort() } else { s.writer.finish() }
    }

    /// Asks the `pick`-th streamed body that has no read outstanding for its next part.
    func bodyRead(pick: UInt8) {
        let chosen: BodyReader? = locked {
            let idle = bodyReaders.filter { $0.stream != nil && !$0.reading }
            guard !idle.isEmpty else { return nil }
            let r = idle[Int(pick) % idle.count]
            r.reading = true
            return r
        }
        guard let r = chosen, let stream = r.stream else { return }
        stream.read { [self] part in
            let problem: String? = locked {
                callbacks += 1
                guard r.reading else { return "a body read answered twice" }
                r.reading = false
                switch part {
                case .bytes(let b):
                    if b.isEmpty { return "an empty body part" }
                    if r.ended { return "body bytes after the end" }
                    r.received += b.count
                    if let expected = stream.expectedLength, Int64(r.received) > expected { return "more body than Content-Length" }
                case .end:
                    if r.ended { return "a second end of body" }
                    r.ended = true
                    if let expected = stream.expectedLength, Int64(r.received) != expected {
                        return "body ended after \(r.received) of \(expected) bytes"
                    }
                case .failed:
                    r.ended = true
                }
                return nil
            }
            if let problem { fail(problem) }
        }
    }

    /// Answers the `pick`-th body reader that has not answered (early, or after its body).
    func bodyRespond(pick: UInt8) {
        let chosen: (BodyReader, Int)? = locked {
            let open = bodyReaders.filter { !$0.responded }
            guard !open.isEmpty else { return nil }
            let r = open[Int(pick) % open.count]
            r.responded = true
            return (r, r.stream == nil ? r.body.count : r.received)
        }
        guard let (r, count) = chosen else { return }
        r.respond(response(r.seq, body: .bytes(Array("read \(count)".utf8))))
    }

    /// Answers the `pick`-th late request (`twice`: calls `respond` a second time, a handler bug the
    /// server must drop). The answer's body is the fixed body for the request's size selector.
    func lateRespond(pick: UInt8, twice: Bool) {
        let chosen: Late? = locked {
            let open = lates.indices.filter { !lates[$0].responded }
            guard !open.isEmpty else { return nil }
            let i = open[Int(pick) % open.count]
            lates[i].responded = true
            return lates[i]
        }
        guard let late = chosen, let request = request(late.seq) else { return }
        let answer = response(late.seq, body: .bytes(ConnectionFuzzBodies.fixed(seq: late.seq, size: ConnectionFuzzBodies.size(request.sizeSelector))))
        late.respond(answer)
        if twice { late.respond(answer) }
    }

    /// Sends a 103 through the `pick`-th `/i` request's interim sender (answered or not).
    func interim(pick: UInt8) {
        let sender: InterimResponseSender? = locked {
            let all = lates.compactMap(\.interim)
            return all.isEmpty ? nil : all[Int(pick) % all.count]
        }
        sender?.send(HTTPResponse(status: HTTPResponse.Status(code: 103), headerFields: [HTTPField.Name("link")!: "</a.css>; rel=preload"]))
    }

    /// The end of a run: every request answered, every stream finished, every body read to its end
    /// (once each, whatever was done before), every detached connection closed.
    func settleEverything() {
        for _ in 0..<64 where locked({ lates.contains { !$0.responded } }) { lateRespond(pick: 0, twice: false) }
        for _ in 0..<64 where locked({ streams.contains { !$0.finished } }) { streamEnd(pick: 0, abort: false, onlyAcknowledged: false) }
        for _ in 0..<64 where locked({ bodyReaders.contains { !$0.responded } }) { bodyRespond(pick: 0) }
        let taken = locked { let d = detached; detached = []; return d }
        for d in taken { d.loop.queue.sync { d.close() } }
    }

    /// Drops every reference to the server's objects (writers, streams, responders).
    func clear() {
        locked {
            streams = []
            bodyReaders = []
            lates = []
            detached = []
        }
    }
}

/// The server's handler: forwards to the current run's world.
struct ConnectionFuzzHandler: HTTPHandler {
    let world: ConnectionFuzzWorld

    func handle(_ request: HTTPServerRequest, respond: @escaping @Sendable (HTTPServerResponse) -> Void) {
        world.handle(request, respond: respond)
    }
}
