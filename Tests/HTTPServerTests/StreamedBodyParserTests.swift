import Testing
@testable import HTTPServer

/// One event of a parse with `pausesAtBodies`, for comparisons.
enum StreamEvent: Equatable {
    case request(target: String, body: [UInt8])
    case head(target: String, contentLength: Int?)
    case part([UInt8])
    case end(trailers: [String])
}

/// Parses `input` cut at `cuts` with `pausesAtBodies`; heads whose target starts with "/stream" are
/// streamed, others buffered. Adjacent parts are merged (how a body is cut into parts depends on the
/// reads). Returns the events, or the error.
func streamParse(_ input: [UInt8], splitAt cuts: [Int] = [], limits: RequestParserLimits = RequestParserLimits())
    -> (events: [StreamEvent], error: HTTPParseError?) {
    var parser = RequestParser(limits: limits)
    parser.pausesAtBodies = true
    var pending: [UInt8] = []
    var events: [StreamEvent] = []
    func add(_ e: StreamEvent) {
        if case .part(let more) = e, case .part(let before)? = events.last { events[events.count - 1] = .part(before + more) } else { events.append(e) }
    }
    var boundaries = cuts.filter { $0 > 0 && $0 < input.count }.sorted()
    boundaries.append(input.count)
    var previous = 0
    for cut in boundaries {
        pending += input[previous..<cut]
        previous = cut
        while !pending.isEmpty || parser.hasPendingOutput {
            let result: (consumed: Int, output: RequestParser.Output)
            do {
                result = try pending.withUnsafeBytes { b in try parser.parse(b) }
            } catch {
                return (events, error as? HTTPParseError)
            }
            var stop = false
            switch result.output {
            case .needMoreData: stop = true
            case .request(let r): add(.request(target: r.target, body: r.body))
            case .head(let r):
                add(.head(target: r.target, contentLength: r.contentLength))
                do { try parser.continueBody(streaming: r.target.hasPrefix("/stream")) } catch { return (events, error) }
            case .bodyPart(let range): add(.part(Array(pending[range])))
            case .bodyEnd(let trailers): add(.end(trailers: trailers.map { "\($0.name)=\($0.value)" }))
            }
            pending.removeFirst(result.consumed)
            if stop { break }
        }
    }
    return (events, nil)
}

@Suite("RequestParser with streamed bodies: heads first, parts, end, split at every byte")
struct StreamedBodyParserTests {
    let input = Array(("POST /stream/a HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\nhello world"
        + "POST /stream/b HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nchunk\r\n3;x=y\r\nedA\r\n0\r\nT: v\r\n\r\n"
        + "POST /buffered HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc"
        + "GET /next HTTP/1.1\r\nHost: t\r\n\r\n").utf8)

    let expected: [StreamEvent] = [
        .head(target: "/stream/a", contentLength: 11), .part(Array("hello world".utf8)), .end(trailers: []),
        .head(target: "/stream/b", contentLength: nil), .part(Array("chunkedA".utf8)), .end(trailers: ["T=v"]),
        .head(target: "/buffered", contentLength: 3), .request(target: "/buffered", body: Array("abc".utf8)),
        .request(target: "/next", body: []),
    ]

    @Test func wholeInput() {
        let r = streamParse(input)
        #expect(r.error == nil)
        #expect(r.events == expected)
    }

    @Test func splitAtEveryByteBoundary() {
        for cut in 1..<input.count {
            let r = streamParse(input, splitAt: [cut])
            #expect(r.error == nil && r.events == expected, "split at \(cut)")
        }
        let byteByByte = streamParse(input, splitAt: Array(1..<input.count))
        #expect(byteByByte.events == expected)
    }

    @Test func streamedBodiesAreNotLimitedButBufferedOnesAre() {
        var limits = RequestParserLimits()
        limits.maxBodyBytes = 4
        let big = Array("POST /stream HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n0123456789".utf8)
        #expect(streamParse(big, limits: limits).events.last == .end(trailers: []))
        let chunked = Array("POST /stream HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n0\r\n\r\n".utf8)
        #expect(streamParse(chunked, limits: limits).events.last == .end(trailers: []))
        let buffered = Array("POST /b HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n0123456789".utf8)
        #expect(streamParse(buffered, limits: limits).error?.status == 413)
        let bufferedChunked = Array("POST /b HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n0\r\n\r\n".utf8)
        #expect(streamParse(bufferedChunked, limits: limits).error?.status == 413)
    }

    @Test func framingErrorsInAStreamedBodyAreErrors() {
        let bad = Array("POST /stream HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nchunk\r\nzz\r\n".utf8)
        let r = streamParse(bad)
        #expect(r.events == [.head(target: "/stream", contentLength: nil), .part(Array("chunk".utf8))])
        #expect(r.error?.status == 400)
    }

    @Test func expectContinueWaitsForTheDecision() {
        var parser = RequestParser()
        parser.pausesAtBodies = true
        let head = Array("POST /stream HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n".utf8)
        let r = try? head.withUnsafeBytes { try parser.parse($0) }
        guard case .head? = r?.output else { Issue.record("no head"); return }
        #expect(parser.awaitingContinue)
        try? parser.continueBody(streaming: true)
        #expect(parser.isStreamingBody && parser.awaitingContinue)
    }

    @Test func withoutPausingNothingChanges() {
        // The default parser never reports heads or parts (what the fuzz target and buffered servers rely on).
        let r = parseAll(Array(input[..<input.firstIndex(of: UInt8(ascii: "G"))!]))
        #expect(r.error == nil && r.requests.map(\.target) == ["/stream/a", "/stream/b", "/buffered"])
        #expect(r.requests[1].body == Array("chunkedA".utf8))
    }
}
