import Testing
@testable import HTTPCore

@Suite("ResponseParser: status line, fields, RFC 9112 §6.3 framing, smuggling shapes, limits, splits")
struct ResponseParserTests {
    // MARK: Status line and fields

    @Test func simpleResponseWithContentLength() throws {
        let r = parseResponses("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello")
        #expect(r.error == nil)
        let res = try #require(r.responses.first)
        #expect(res.status == 200)
        #expect(res.reason == "OK")
        #expect(res.version == .http1_1)
        #expect(res.fields == ["Content-Type: text/plain", "Content-Length: 5"])
        #expect(res.bodyLength == .known(5))
        #expect(res.keepAlive)
        #expect(res.body == Array("hello".utf8))
        #expect(r.responses.count == 1)
    }

    @Test func statusLineVariants() throws {
        #expect(parseResponses("HTTP/1.1 404 Not Found Here\r\nContent-Length: 0\r\n\r\n").responses.first?.reason == "Not Found Here")
        #expect(parseResponses("HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n").responses.first?.reason == "")
        // No SP after the code (common in the wild): accepted, empty reason.
        #expect(parseResponses("HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n").responses.first?.status == 200)
        #expect(parseResponses("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").responses.first?.version == .http1_0)
        #expect(parseResponses("HTTP/1.2 200 OK\r\nContent-Length: 0\r\n\r\n").responses.first?.version == .http1_1)
        #expect(parseResponses("HTTP/1.1 599 x\r\nContent-Length: 0\r\n\r\n").responses.first?.status == 599)
        // Reason phrases may carry obs-text and HTAB.
        #expect(parseResponses(Array("HTTP/1.1 200 O\tK".utf8) + [0xE9] + Array("\r\nContent-Length: 0\r\n\r\n".utf8))
                    .responses.first?.status == 200)
    }

    @Test func malformedStatusLines() {
        for line in ["HTTP/1.1 20 OK", "HTTP/1.1 2000 OK", "HTTP/1.1 099 Low", "HTTP/1.1 600 High", "http/1.1 200 OK",
                     "HTTP/1.1  200 OK", " HTTP/1.1 200 OK", "HTTP/1.1 200OK", "HTTP/1.1 2x0 OK", "HTTP/11 200 OK",
                     "HTTP/1.1 200 O\u{0}K", "HTTP/1.1 200 O\u{7F}K", "HTTP/1.1\t200 OK", "HTTP/1.1", ""] {
            #expect(rejection(line + "\r\nContent-Length: 0\r\n\r\n") == .malformed, "\(line)")
        }
        #expect(rejection("HTTP/2.0 200 OK\r\n\r\n") == .unsupported)
        #expect(rejection("HTTP/0.9 200 OK\r\n\r\n") == .unsupported)
        // Empty lines before the status line are not skipped in responses.
        #expect(rejection("\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n") == .malformed)
    }

    @Test func garbageFailsBeforeAnyLineEnd() {
        // A stream that cannot be HTTP is refused after a few bytes, without waiting for a LF.
        #expect(parseResponses("ICY 200 OK", eof: false).error?.kind == .malformed)
        #expect(parseResponses("SSH-2.0-OpenSSH", eof: false).error?.kind == .malformed)
        #expect(parseResponses("HTTP/", eof: false).error == nil)
    }

    @Test func fieldsKeptInOrderAndTrimmed() throws {
        let r = parseResponses("HTTP/1.1 200 OK\r\nX-A: 1\r\nx-a:   2 \t\r\nX-B:\r\nSet-Cookie: a=b\r\nContent-Length: 0\r\n\r\n")
        let res = try #require(r.responses.first)
        #expect(res.fields == ["X-A: 1", "x-a: 2", "X-B: ", "Set-Cookie: a=b", "Content-Length: 0"])
    }

    @Test func headAccessors() throws {
        var parser = ResponseParser()
        let bytes = Array("HTTP/1.1 201 Created\r\nLocation: /x\r\nX-Y: a\r\nx-y: b\r\nContent-Length: 0\r\n\r\n".utf8)
        let (consumed, event) = try bytes.withUnsafeBytes { try parser.parse($0) }
        #expect(consumed == bytes.count)
        guard case .head(let head) = event else { Issue.record("no head"); return }
        #expect(head.values(of: "X-Y") == ["a", "b"])
        #expect(head.fieldCount == 4)
        #expect(head.fieldName(at: 0) == "Location")
        #expect(Array(head.fieldValueBytes(at: 0)) == Array("/x".utf8))
        #expect(head.headBytes == bytes)
        #expect(head.transferCodings.isEmpty)
        #expect(!head.isInformational)
    }

    @Test func malformedFields() {
        let cases = ["X-A: 1\r\n folded", "X-A : 1", "X-A\t: 1", "X-A 1", ": empty-name", "X(A): 1", "X-A: a\u{0}b",
                     "X-A: a\u{1}b", "X-A: a\u{7F}", "X-A: a\rb"]
        for field in cases {
            #expect(rejection("HTTP/1.1 200 OK\r\n\(field)\r\nContent-Length: 0\r\n\r\n") == .malformed, "\(field)")
        }
    }

    @Test func bareLineEndingsRejected() {
        #expect(rejection("HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n") == .malformed)
        #expect(rejection("HTTP/1.1 200 OK\r\nContent-Length: 0\n\r\n") == .malformed)
        #expect(rejection("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\n") == .malformed)
        #expect(rejection("HTTP/1.1 200 OK\rX: y\r\nContent-Length: 0\r\n\r\n") == .malformed)
        #expect(rejection("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n") == .malformed)
        #expect(rejection("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\n0\r\n\r\n") == .malformed)
        #expect(rejection("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: y\n\r\n") == .malformed)
    }

    // MARK: Body length, RFC 9112 §6.3 in order

    @Test func responseToHEADHasNoBody() throws {
        let stream = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        let r = parseResponses(stream, heads: [true, true, false])
        #expect(r.error == nil)
        #expect(r.responses.map(\.bodyLength) == [.none, .none, .known(2)])
        #expect(r.responses.map(\.keepAlive) == [true, true, true])
        #expect(r.responses.last?.body == Array("ok".utf8))
    }

    @Test func informationalResponsesPrecedeTheFinalOne() throws {
        let r = parseResponses("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"
                               + "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx")
        #expect(r.error == nil)
        let res = try #require(r.responses.first)
        #expect(res.informational == [100, 103, 100])
        #expect(res.status == 200)
        #expect(res.body == [0x78])
        // A 1xx has no body even with framing fields; the final head follows directly.
        let withCL = parseResponses("HTTP/1.1 100 Continue\r\nContent-Length: 5\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n")
        #expect(withCL.error == nil)
        #expect(withCL.responses.first?.informational == [100])
        #expect(withCL.responses.first?.status == 204)
    }

    @Test func switchingProtocolsAndTooManyInterimResponsesRefused() {
        #expect(rejection("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n") == .unsupported)
        var limits = ResponseParserLimits()
        limits.maxInformationalResponses = 3
        let three = String(repeating: "HTTP/1.1 100 Continue\r\n\r\n", count: 3) + "HTTP/1.1 204 No Content\r\n\r\n"
        #expect(rejection(three, limits: limits) == nil)
        let four = String(repeating: "HTTP/1.1 100 Continue\r\n\r\n", count: 4) + "HTTP/1.1 204 No Content\r\n\r\n"
        #expect(rejection(four, limits: limits) == .tooLarge)
    }

    @Test func noContentAndNotModifiedHaveNoBody() throws {
        let r = parseResponses("HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n"
                               + "HTTP/1.1 304 Not Modified\r\nContent-Length: 7\r\nETag: \"a\"\r\n\r\n"
                               + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        #expect(r.error == nil)
        #expect(r.responses.map(\.status) == [204, 304, 200])
        #expect(r.responses.map(\.bodyLength) == [.none, .none, .known(0)])
        #expect(r.responses.allSatisfy { $0.body.isEmpty && $0.keepAlive })
    }

    @Test func chunkedWithExtensionsAndTrailers() throws {
        let r = parseResponses("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                               + "5;name=value\r\nhello\r\n1 ; a ; b=\"q\"\r\n,\r\nA\r\n 012345678\r\n"
                               + "0\r\nX-Checksum: abc\r\nX-Other:  d \r\n\r\n")
        #expect(r.error == nil)
        let res = try #require(r.responses.first)
        #expect(res.bodyLength == .chunked)
        #expect(res.body == Array("hello, 012345678".utf8))
        #expect(res.trailers == ["X-Checksum: abc", "X-Other: d"])
        #expect(res.keepAlive)
        #expect(res.bodyEvents == 3)
    }

    @Test func chunkedCodingNamesAreCaseInsensitiveAndHexIsEitherCase() throws {
        let r = parseResponses("HTTP/1.1 200 OK\r\nTransfer-Encoding: CHUNKED\r\n\r\na\r\n0123456789\r\nA\r\n0123456789\r\n0\r\n\r\n")
        #expect(r.error == nil)
        #expect(r.responses.first?.body.count == 20)
    }

    @Test func transferEncodingNotEndingInChunkedIsReadUntilClose() throws {
        for codings in ["gzip", "chunked, gzip", "identity"] {
            let r = parseResponses("HTTP/1.1 200 OK\r\nTransfer-Encoding: \(codings)\r\n\r\nraw bytes")
            #expect(r.error == nil, "\(codings)")
            let res = try #require(r.responses.first)
            #expect(res.bodyLength == .untilClose)
            #expect(!res.keepAlive)
            #expect(res.body == Array("raw bytes".utf8))
        }
        // The codings are reported so the client can refuse bodies it cannot decode.
        var parser = ResponseParser()
        let bytes = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n".utf8)
        let (_, event) = try bytes.withUnsafeBytes { try parser.parse($0) }
        guard case .head(let head) = event else { Issue.record("no head"); return }
        #expect(head.transferCodings == [Array("gzip".utf8), Array("chunked".utf8)])
        #expect(head.bodyLength == .chunked)
    }

    @Test func closeDelimitedBody() throws {
        let r = parseResponses("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end")
        let res = try #require(r.responses.first)
        #expect(r.error == nil)
        #expect(res.bodyLength == .untilClose)
        #expect(!res.keepAlive)
        #expect(res.body == Array("until the end".utf8))
        let old = try #require(parseResponses("HTTP/1.0 200 OK\r\n\r\nold").responses.first)
        #expect(old.bodyLength == .untilClose)
        #expect(old.body == Array("old".utf8))
        // Without EOF the response is not complete.
        #expect(parseResponses("HTTP/1.1 200 OK\r\n\r\nabc", eof: false).responses.isEmpty)
        // An empty close-delimited body is fine too.
        #expect(parseResponses("HTTP/1.1 200 OK\r\n\r\n").responses.first?.body == [])
    }

    @Test func keepAliveRules() {
        func keepAlive(_ head: String) -> Bool? {
            parseResponses(head + "Content-Length: 0\r\n\r\n").responses.first?.keepAlive
        }
        #expect(keepAlive("HTTP/1.1 200 OK\r\n") == true)
        #expect(keepAlive("HTTP/1.1 200 OK\r\nConnection: close\r\n") == false)
        #expect(keepAlive("HTTP/1.1 200 OK\r\nConnection: foo, Close\r\n") == false)
        #expect(keepAlive("HTTP/1.0 200 OK\r\n") == false)
        #expect(keepAlive("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n") == true)
        #expect(keepAlive("HTTP/1.0 200 OK\r\nConnection: keep-alive, close\r\n") == false)
    }

    // MARK: Content-Length

    @Test func contentLengthListsOfIdenticalValuesAreOneValue() throws {
        for head in ["Content-Length: 3, 3", "Content-Length: 3,3 , 3", "Content-Length: 3\r\nContent-Length: 3"] {
            let r = parseResponses("HTTP/1.1 200 OK\r\n\(head)\r\n\r\nabc")
            #expect(r.error == nil, "\(head)")
            #expect(r.responses.first?.bodyLength == .known(3))
            #expect(r.responses.first?.body == Array("abc".utf8))
        }
    }

    @Test func badContentLengthsRejected() {
        for value in ["3, 4", "-1", "+3", "0x10", "", "3 3", "3,", ",3", "3;", "1e3", "٣"] {
            #expect(rejection("HTTP/1.1 200 OK\r\nContent-Length: \(value)\r\n\r\nabc") == .malformed, "\(value)")
        }
        #expect(rejection("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd") == .malformed)
        #expect(rejection("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n") == .tooLarge)
        #expect(rejection("HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775808\r\n\r\n") == .tooLarge)
    }

    // MARK: Smuggling-shaped responses

    @Test func contentLengthWithTransferEncodingRejected() {
        #expect(rejection("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n") == .malformed)
        #expect(rejection("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n") == .malformed)
        #expect(rejection("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 5\r\n\r\nabcde") == .malformed)
        // Even where no body follows (HEAD, 304), the combination says the upstream is confused.
        #expect(rejection("HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n") == .malformed)
    }

    @Test func badTransferEncodingsRejected() {
        #expect(rejection("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n") == .malformed)
        #expect(rejection("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n") == .malformed)
        #expect(rejection("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n") == .malformed)
        #expect(rejection("HTTP/1.1 200 OK\r\nTransfer-Encoding: \r\n\r\n") == .malformed)
        #expect(rejection("HTTP/1.1 200 OK\r\nTransfer-Encoding: ,\r\n\r\n") == .malformed)
    }

    @Test func badChunkSizesRejected() {
        let prefix = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        for size in ["-1", "0x5", "", "g", " 5", "5 x", "+5", "5\u{0}"] {
            #expect(rejection(prefix + "\(size)\r\nhello\r\n0\r\n\r\n") == .malformed, "\(size)")
        }
        #expect(rejection(prefix + "5;ext=\u{1}\r\nhello\r\n0\r\n\r\n") == .malformed)
        #expect(rejection(prefix + "ffffffffffffffffff\r\nx\r\n0\r\n\r\n") == .tooLarge)
        #expect(rejection(prefix + "8000000000000000\r\nx\r\n0\r\n\r\n") == .tooLarge)
        // Chunk data longer than announced, or not followed by CRLF.
        #expect(rejection(prefix + "3\r\nhello\r\n0\r\n\r\n") == .malformed)
        #expect(rejection(prefix + "5\r\nhelloXY0\r\n\r\n") == .malformed)
    }

    @Test func malformedTrailersRejected() {
        let prefix = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n"
        #expect(rejection(prefix + "X: y\r\n folded\r\n\r\n") == .malformed)
        #expect(rejection(prefix + "X : y\r\n\r\n") == .malformed)
        #expect(rejection(prefix + "X: \u{0}\r\n\r\n") == .malformed)
    }

    @Test func truncatedResponsesAreErrors() {
        #expect(rejection("") == .truncated)
        #expect(rejection("HTTP/1.1 200 OK\r\nContent-Len") == .truncated)
        #expect(rejection("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc") == .truncated)
        #expect(rejection("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel") == .truncated)
        #expect(rejection("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n") == .truncated)
        #expect(rejection("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: y\r\n") == .truncated)
        #expect(rejection("HTTP/1.1 100 Continue\r\n\r\n") == .truncated)
    }

    @Test func endOfInputTellsWhetherAnythingStarted() throws {
        var parser = ResponseParser()
        #expect(parser.hasNotStarted)
        #expect(throws: ResponseParseError.truncated("connection closed before a response")) { try parser.endOfInput() }
        var partial = ResponseParser()
        _ = try Array("HTTP/1.1".utf8).withUnsafeBytes { try partial.parse($0) }
        #expect(!partial.hasNotStarted)
        #expect(throws: ResponseParseError.truncated("connection closed in the response head")) { try partial.endOfInput() }
    }

    @Test func bytesAfterACompleteResponseAreLeftAlone() throws {
        var parser = ResponseParser()
        let bytes = Array("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxEXTRA".utf8)
        var offset = 0
        var ended = false
        while !ended {
            let (consumed, event) = try bytes[offset...].withUnsafeBytes { try parser.parse($0) }
            offset += consumed
            if case .end = event { ended = true }
        }
        #expect(parser.isComplete)
        #expect(offset == bytes.count - 5)
        let (consumed, event) = try bytes[offset...].withUnsafeBytes { try parser.parse($0) }
        #expect(consumed == 0)
        guard case .needMoreData = event else { Issue.record("expected needMoreData"); return }
    }

    // MARK: Limits

    @Test func limitsEnforced() {
        var limits = ResponseParserLimits()
        limits.maxStatusLineBytes = 20
        limits.maxHeaderBytes = 80
        limits.maxHeaderCount = 3
        limits.maxChunkLineBytes = 8
        #expect(rejection("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", limits: limits) == nil)
        #expect(rejection("HTTP/1.1 200 A long reason\r\n\r\n", limits: limits) == .tooLarge)
        #expect(parseResponses("HTTP/1.1 200 A long reason phrase", eof: false, limits: limits).error?.kind == .tooLarge)
        #expect(rejection("HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", limits: limits) == .tooLarge)
        #expect(rejection("HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: 80) + "\r\n\r\n", limits: limits) == .tooLarge)
        #expect(parseResponses("HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: 80), eof: false, limits: limits)
                    .error?.kind == .tooLarge)
        let chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        #expect(rejection(chunked + "1;abcdefgh\r\nx\r\n0\r\n\r\n", limits: limits) == .tooLarge)
        #expect(parseResponses(chunked + "1;abcdefgh", eof: false, limits: limits).error?.kind == .tooLarge)
        #expect(rejection(chunked + "0\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", limits: limits) == .tooLarge)
        #expect(rejection(chunked + "0\r\nX: " + String(repeating: "a", count: 80) + "\r\n\r\n", limits: limits) == .tooLarge)
    }

    // MARK: Split reads

    /// Valid streams (one or several responses on one connection) covering every framing rule.
    static let corpus: [(text: String, heads: [Bool])] = [
        ("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello", []),
        ("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok", []),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n1\r\n!\r\n0\r\nT: 1\r\n\r\n"
            + "HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n", []),
        ("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\n\r\nabc", [true, false]),
        ("HTTP/1.0 200 OK\r\nServer: old\r\n\r\nbody until the connection closes", []),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n\u{1F}\u{8B}raw", []),
        ("HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\nContent-Length: 4\r\n\r\nfail", []),
    ]

    @Test(arguments: corpus.indices)
    func everySplitGivesTheSameResult(_ index: Int) throws {
        let (text, heads) = Self.corpus[index]
        let input = Array(text.utf8)
        let whole = parseResponses(input, heads: heads)
        #expect(whole.error == nil)
        #expect(!whole.responses.isEmpty)
        for cut in 1..<input.count {
            let split = parseResponses(input, splitAt: [cut], heads: heads)
            #expect(split.error == nil, "cut \(cut)")
            #expect(split.responses.map(\.withoutEventCount) == whole.responses.map(\.withoutEventCount), "cut \(cut)")
        }
        let byteByByte = parseResponses(input, splitAt: Array(1..<input.count), heads: heads)
        #expect(byteByByte.error == nil)
        #expect(byteByByte.responses.map(\.withoutEventCount) == whole.responses.map(\.withoutEventCount))
    }

    /// Invalid streams are rejected (with the same kind of error) wherever they are split.
    @Test func everySplitOfABadStreamIsRejected() {
        let bad = ["HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXY0\r\n\r\n",
                   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n\r\n",
                   "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
                   "HTTP/1.1 200 OK\r\nX: a\u{0}b\r\n\r\n",
                   "HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n"]
        for text in bad {
            let input = Array(text.utf8)
            let whole = parseResponses(input).error?.kind
            #expect(whole == .malformed, "\(text)")
            for cut in 1..<input.count {
                #expect(parseResponses(input, splitAt: [cut]).error?.kind == whole, "cut \(cut) of \(text)")
            }
            #expect(parseResponses(input, splitAt: Array(1..<input.count)).error?.kind == whole)
        }
    }

    /// A large head fed one byte at a time completes (linear rescanning) and yields every field.
    @Test func largeHeadByteByByte() throws {
        var text = "HTTP/1.1 200 OK\r\n"
        for i in 0..<90 { text += "X-Field-\(i): " + String(repeating: "v", count: 400) + "\r\n" }
        text += "Content-Length: 0\r\n\r\n"
        let input = Array(text.utf8)
        let r = parseResponses(input, splitAt: Array(1..<input.count))
        #expect(r.error == nil)
        #expect(r.responses.first?.fields.count == 91)
    }

    /// Body events are slices of the input: a large body offered in one buffer is one event.
    @Test func bodiesStreamAsSlicesOfTheInput() throws {
        let body = [UInt8](repeating: 0x61, count: 1 << 20)
        let input = Array("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
        let r = parseResponses(input)
        #expect(r.responses.first?.bodyEvents == 1)
        #expect(r.responses.first?.body == body)
        let pieces = parseResponses(input, splitAt: stride(from: 1000, to: input.count, by: 65536).map { $0 })
        #expect(pieces.responses.first?.body == body)
        #expect(pieces.responses.first?.bodyEvents == 17)
    }
}

extension ParsedTestResponse {
    /// The response without the number of body events (which depends on how the input was split).
    var withoutEventCount: ParsedTestResponse {
        var copy = self
        copy.bodyEvents = 0
        return copy
    }
}
