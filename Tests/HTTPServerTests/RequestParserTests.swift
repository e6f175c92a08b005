import Testing
@testable import HTTPServer

@Suite("RequestParser: request line, fields, bodies, smuggling defences, limits")
struct RequestParserTests {
    @Test func simpleGet() throws {
        let r = parseAll("GET /a/b?x=1 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n")
        #expect(r.error == nil)
        let req = try #require(r.requests.first)
        #expect(req.method == "GET")
        #expect(req.target == "/a/b?x=1")
        #expect(req.version == .http1_1)
        #expect(req.targetForm == .origin)
        #expect(req.keepAlive)
        #expect(req.body.isEmpty)
        #expect(req.fields.map(\.name) == ["Host", "Accept"])
        #expect(req.values(of: "HOST") == ["example.com"])
    }

    @Test func repeatedFieldsKeptInOrderAndValuesTrimmed() throws {
        let r = parseAll("GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nx-a:   2 \t\r\nX-B:\r\nX-A: 3\r\n\r\n")
        let req = try #require(r.requests.first)
        #expect(req.values(of: "x-a") == ["1", "2", "3"])
        #expect(req.values(of: "x-b") == [""])
        let http = req.makeHTTPRequest { _ in "http" }
        #expect(http.headerFields[values: .init("X-A")!] == ["1", "2", "3"])
        #expect(http.authority == "h")
        #expect(http.path == "/")
    }

    /// The conversion to `HTTPRequest` reuses prebuilt names and methods (`CommonFieldNames`) only for
    /// exact spellings: names keep the spelling the client sent, lookups stay case-insensitive, and
    /// values with obs-text bytes keep their bytes.
    @Test func conversionKeepsNamesMethodsAndValuesAsSent() throws {
        let raw = "PATCH /x HTTP/1.1\r\nHOST: h\r\naccept-encoding: br\r\nAccept-Encoding: gzip\r\n"
            + "Available-Dictionary: :YWJj:\r\nX-Custom: 1\r\nX-Bytes: caf\u{E9}\r\n\r\n"
        let req = try #require(parseAll(raw).requests.first)
        let http = req.makeHTTPRequest { _ in "http" }
        #expect(http.method == .patch)
        #expect(http.headerFields.map(\.name.rawName)
                == ["HOST", "accept-encoding", "Accept-Encoding", "Available-Dictionary", "X-Custom", "X-Bytes"])
        #expect(http.headerFields[values: .acceptEncoding] == ["br", "gzip"])
        #expect(http.headerFields[.init("available-dictionary")!] == ":YWJj:")
        #expect(http.authority == "h")
        #expect(http.headerFields[.init("x-bytes")!] == "caf\u{E9}")
        // Not UTF-8 (a lone Latin-1 byte): accepted as obs-text and passed on, not dropped.
        let latin1 = try #require(parseAll(Array("GET / HTTP/1.1\r\nHost: h\r\nX-B: a".utf8) + [0xE9]
                                           + Array("\r\n\r\n".utf8)).requests.first)
        let value = try #require(latin1.makeHTTPRequest { _ in "http" }.headerFields[.init("x-b")!])
        #expect(value.hasPrefix("a") && value.utf8.count > 1)
        // A method without a prebuilt value (the parser admits only the RFC 9110 methods and PATCH).
        let trace = try #require(parseAll("TRACE /d HTTP/1.1\r\nHost: h\r\n\r\n").requests.first)
        #expect(trace.makeHTTPRequest { _ in "http" }.method == .trace)
    }

    @Test func http10KeepAliveOnlyOnRequest() throws {
        #expect(parseAll("GET / HTTP/1.0\r\n\r\n").requests.first?.keepAlive == false)
        #expect(parseAll("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").requests.first?.keepAlive == true)
        #expect(parseAll("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n").requests.first?.keepAlive == false)
        #expect(parseAll("GET / HTTP/1.1\r\nHost: h\r\nConnection: foo, Close\r\n\r\n").requests.first?.keepAlive == false)
    }

    @Test func targetForms() throws {
        let abs = try #require(parseAll("GET http://example.com:8080/p?q HTTP/1.1\r\nHost: x\r\n\r\n").requests.first)
        #expect(abs.targetForm == .absolute)
        let h = abs.makeHTTPRequest { _ in "https" }
        #expect(h.authority == "example.com:8080")
        #expect(h.path == "/p?q")
        #expect(h.scheme == "https")
        #expect(parseAll("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n").requests.first?.targetForm == .asterisk)
        // An absolute-form OPTIONS with an empty path and no query asks about the server: `*` (RFC 9112 §3.2.4).
        let serverWide = try #require(parseAll("OPTIONS http://example.com:8080 HTTP/1.1\r\nHost: x\r\n\r\n").requests.first)
        #expect(serverWide.makeHTTPRequest { _ in "http" }.path == "*")
        #expect(serverWide.makeHTTPRequest { _ in "http" }.authority == "example.com:8080")
        let withQuery = try #require(parseAll("OPTIONS http://example.com?x HTTP/1.1\r\nHost: x\r\n\r\n").requests.first)
        #expect(withQuery.makeHTTPRequest { _ in "http" }.path == "/?x")
        let get = try #require(parseAll("GET http://example.com HTTP/1.1\r\nHost: x\r\n\r\n").requests.first)
        #expect(get.makeHTTPRequest { _ in "http" }.path == "/")
        #expect(rejection("GET * HTTP/1.1\r\nHost: x\r\n\r\n") == 400)
        #expect(rejection("GET foo HTTP/1.1\r\nHost: x\r\n\r\n") == 400)
    }

    @Test func absoluteFormAuthorityIsValidatedLikeHost() throws {
        // Userinfo, bytes a Host field may not hold, an empty host: 400 with the parser's reason.
        for target in ["http://a\"b<c>@x/p", "http://user@x/p", "http://user:pw@x", "https://@x/p",
                       "http:///p", "http://:80/p", "http://?q", "http://a{b/p",
                       "http://x#f/p", "HTTP:///p"] {
            let error = parseAll("GET \(target) HTTP/1.1\r\nHost: ok.example\r\n\r\n").error
            #expect(error?.status == 400, "\(target)")
            #expect(error?.reason.contains("request target") == true, "\(target): \(String(describing: error))")
        }
        for (target, authority) in [("http://x/p", "x"), ("https://x:8443?q", "x:8443"), ("http://[::1]:80/p", "[::1]:80"),
                                    ("http://a.b-c_d~e%41/", "a.b-c_d~e%41"), ("HTTP://X", "X")] {
            let parsed = try #require(parseAll("GET \(target) HTTP/1.1\r\nHost: ok.example\r\n\r\n").requests.first, "\(target)")
            #expect(parsed.makeHTTPRequest { _ in "http" }.authority == authority)
        }
    }

    @Test func contentLengthThatOverflowsIsRejected() {
        for value in ["99999999999999999999999", "9223372036854775808", "9223372036854775807, 99999999999999999999"] {
            let error = parseAll("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: \(value)\r\n\r\n").error
            #expect(error?.status == 400, "\(value)")
            #expect(error?.reason == "Content-Length too large")
        }
        // The largest Int is a length (the body limit answers it, 413).
        #expect(rejection("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 9223372036854775807\r\n\r\n") == 413)
    }

    @Test func malformedRequestLines() {
        for line in ["GET  / HTTP/1.1", "GET / HTTP/1.1 ", "GET /\tx HTTP/1.1", "GET / http/1.1", "GET / HTTP/1",
                     "GET /", "G(T / HTTP/1.1", " GET / HTTP/1.1", "GET / HTTP/1.10", "GET /\u{7F} HTTP/1.1"] {
            #expect(rejection(line + "\r\nHost: x\r\n\r\n") == 400, "\(line)")
        }
    }

    @Test func versions() {
        #expect(rejection("GET / HTTP/2.0\r\nHost: x\r\n\r\n") == 505)
        #expect(rejection("GET / HTTP/0.9\r\nHost: x\r\n\r\n") == 505)
        // HTTP/1.x with x > 1 is handled as 1.1 (RFC 9112 §2.3).
        #expect(parseAll("GET / HTTP/1.2\r\nHost: x\r\n\r\n").requests.first?.version == .http1_1)
    }

    @Test func methods() {
        #expect(rejection("CONNECT example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n") == 501)
        for m in ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "TRACE", "PATCH"] {
            #expect(parseAll("\(m) / HTTP/1.1\r\nHost: x\r\n\r\n").requests.count == 1)
        }
        // Any token is a method (RFC 9110 §9.1), spelled as sent (methods are case-sensitive).
        for m in ["BREW", "PROPFIND", "QUERY", "get", "M-SEARCH", "X!#$%&'*+.^_`|~1"] {
            let request = parseAll("\(m) / HTTP/1.1\r\nHost: x\r\n\r\n").requests.first
            #expect(request?.method == m)
            #expect(request?.makeHTTPRequest { _ in "http" }.method.rawValue == m)
        }
        // A body is framed by its fields whatever the method.
        let report = parseAll("REPORT /cal HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n<a/>\n")
        #expect(report.requests.first?.body == Array("<a/>\n".utf8))
        // Not a token: still 400.
        #expect(rejection("BR(W / HTTP/1.1\r\nHost: x\r\n\r\n") == 400)
        #expect(rejection("PROP\u{7F}FIND / HTTP/1.1\r\nHost: x\r\n\r\n") == 400)
        // Only OPTIONS takes the asterisk form.
        #expect(rejection("PROPFIND * HTTP/1.1\r\nHost: x\r\n\r\n") == 400)
    }

    /// `Authorization` is a singleton field (RFC 9110 §11.6.2): a second line is a 400 (as nginx), on the
    /// next request of the connection too.
    @Test func twoAuthorizationLinesAreRefused() {
        #expect(rejection("GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nauthorization: Bearer b\r\n\r\n") == 400)
        #expect(parseAll("GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\n\r\n"
                         + "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\n\r\n").requests.count == 2)
    }

    @Test func fieldSyntax() {
        #expect(rejection("GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n folded\r\n\r\n") == 400)   // obs-fold
        #expect(rejection("GET / HTTP/1.1\r\nHost : x\r\n\r\n") == 400)                   // space before colon
        #expect(rejection("GET / HTTP/1.1\r\nHost\t: x\r\n\r\n") == 400)
        #expect(rejection("GET / HTTP/1.1\r\nHost: x\r\n: v\r\n\r\n") == 400)              // empty name
        #expect(rejection("GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n") == 400)
        #expect(rejection("GET / HTTP/1.1\r\nHost: x\r\nX(A): v\r\n\r\n") == 400)
        #expect(rejection("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\u{0}b\r\n\r\n") == 400)    // NUL in value
        #expect(rejection("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n") == 400)       // bare CR
        #expect(rejection("GET / HTTP/1.1\nHost: x\r\n\r\n") == 400)                      // bare LF
        #expect(rejection("GET / HTTP/1.1\r\nHost: x\n\n") == 400)
        // obs-text is allowed in values and kept byte for byte.
        var bytes = Array("GET / HTTP/1.1\r\nHost: x\r\nX-A: ".utf8) + [0xE9, 0xFF] + Array("\r\n\r\n".utf8)
        let r = parseAll(bytes)
        #expect(r.error == nil)
        #expect(Array(r.requests[0].fieldValueBytes(at: 1)) == [0xE9, 0xFF])
        bytes.removeAll()
    }

    @Test func hostRules() {
        #expect(rejection("GET / HTTP/1.1\r\n\r\n") == 400)
        #expect(rejection("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n") == 400)
        #expect(rejection("GET / HTTP/1.1\r\nHost: a b\r\n\r\n") == 400)
        #expect(rejection("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n") == 400)
        #expect(parseAll("GET / HTTP/1.0\r\n\r\n").requests.count == 1)
        #expect(parseAll("GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n").requests.count == 1)
    }

    @Test func contentLengthBody() throws {
        let r = parseAll("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(r.error == nil)
        #expect(r.requests.count == 2)
        #expect(r.requests[0].body == Array("hello".utf8))
        #expect(r.requests[1].method == "GET")
        #expect(parseAll("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 3\r\n\r\nabc").requests.first?.body == Array("abc".utf8))
        #expect(parseAll("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc").requests.count == 1)
    }

    @Test func chunkedBodyWithExtensionsAndTrailers() throws {
        let text = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;name=value\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n"
        let r = parseAll(text)
        #expect(r.error == nil)
        let req = try #require(r.requests.first)
        #expect(req.body == Array("hello world".utf8))
        #expect(req.trailers.map(\.name) == ["X-Trailer"])
        #expect(req.trailers.map(\.value) == ["t"])
        #expect(parseAll("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\nA\r\n0123456789\r\n0\r\n\r\n")
            .requests.first?.body.count == 10)
    }

    @Test func chunkedBodyErrors() {
        let head = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        #expect(rejection(head + "g\r\n") == 400)
        #expect(rejection(head + "\r\n") == 400)
        #expect(rejection(head + "5\r\nhelloXX") == 400)         // missing CRLF after data
        #expect(rejection(head + "5 x\r\nhello\r\n") == 400)
        #expect(rejection(head + "5;a\u{1}\r\nhello\r\n") == 400)
        #expect(rejection(head + "ffffffffffffffffffff\r\n") == 400)   // does not fit in 64 bits: malformed
        #expect(rejection(head + "fffffffffffffffff\r\n") == 400)
        #expect(rejection(head + "0x5\r\nhello\r\n0\r\n\r\n") == 400)
        #expect(rejection(head + "-5\r\nhello\r\n0\r\n\r\n") == 400)
        #expect(rejection(head + "5\nhello\r\n0\r\n\r\n") == 400)   // bare LF after the size
        #expect(rejection(head + "0\r\nBad Trailer: x\r\n\r\n") == 400)
    }

    @Test func smugglingDefences() {
        // Both Content-Length and Transfer-Encoding.
        #expect(rejection("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n") == 400)
        #expect(rejection("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n") == 400)
        // Transfer-Encoding other than a final chunked.
        #expect(rejection("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n") == 400)
        #expect(rejection("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n") == 400)
        #expect(rejection("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n") == 400)
        #expect(rejection("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n") == 400)
        #expect(rejection("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n") == 400)
        #expect(rejection("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n\r\n") == 400)
        // A coding we do not implement before chunked.
        #expect(rejection("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n") == 501)
        // Transfer-Encoding in HTTP/1.0.
        #expect(rejection("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n") == 400)
        // Duplicate differing and invalid Content-Length.
        #expect(rejection("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab") == 400)
        #expect(rejection("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1, 2\r\n\r\nab") == 400)
        for bad in ["+5", "-1", "5 5", "0x5", "", "5,", "abc", "5.0"] {
            #expect(rejection("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: \(bad)\r\n\r\nhello") == 400, "\(bad)")
        }
    }

    @Test func limits() {
        var small = RequestParserLimits()
        small.maxRequestLineBytes = 64
        small.maxHeaderBytes = 256
        small.maxHeaderCount = 4
        small.maxBodyBytes = 10
        let longTarget = "/" + String(repeating: "a", count: 100)
        #expect(rejection("GET \(longTarget) HTTP/1.1\r\nHost: x\r\n\r\n", limits: small) == 414)
        // 414 before the line is even complete.
        #expect(parseAll("GET \(longTarget)", limits: small).error?.status == 414)
        #expect(rejection("GET / HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "b", count: 300))\r\n\r\n", limits: small) == 431)
        #expect(parseAll("GET / HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "b", count: 300))", limits: small).error?.status == 431)
        #expect(rejection("GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", limits: small) == 431)
        #expect(rejection("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n", limits: small) == 413)
        #expect(rejection("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n", limits: small) == 400)
        #expect(rejection("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n6\r\nabcdef\r\n", limits: small) == 413)
        #expect(parseAll("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789", limits: small).requests.count == 1)
    }

    @Test func expectContinue() {
        let r = parseAll("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
        #expect(r.error == nil && r.requests.isEmpty && r.sawContinue)
        let done = parseAll("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\nabc")
        #expect(done.requests.first?.body == Array("abc".utf8))
        #expect(rejection("POST / HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nContent-Length: 3\r\n\r\nabc") == 417)
    }

    @Test func leadingEmptyLinesAreIgnored() {
        let r = parseAll("\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(r.requests.first?.target == "/")
        #expect(r.requests.first?.fields.first?.name == "Host")
    }

    static let mixedPipeline =
        "GET /one HTTP/1.1\r\nHost: x\r\n\r\n"
        + "POST /two HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody"
        + "PUT /three HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3;e=1\r\nabc\r\n2\r\nde\r\n0\r\nT: v\r\n\r\n"
        + "GET /four HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"

    static func check(_ requests: [ParsedRequest]) {
        #expect(requests.map(\.target) == ["/one", "/two", "/three", "/four"])
        #expect(requests.map(\.body) == [[], Array("body".utf8), Array("abcde".utf8), []])
        #expect(requests[2].trailers.first?.value == "v")
        #expect(requests[3].version == .http1_0 && requests[3].keepAlive)
    }

    @Test func splitAtEveryByteBoundary() {
        let input = Array(Self.mixedPipeline.utf8)
        for cut in 1..<input.count {
            let r = parseAll(input, splitAt: [cut])
            #expect(r.error == nil, "cut \(cut)")
            if r.requests.count == 4 { Self.check(r.requests) } else { Issue.record("cut \(cut): \(r.requests.count) requests") }
        }
        // And one byte at a time.
        let r = parseAll(input, splitAt: Array(1..<input.count))
        #expect(r.requests.count == 4)
        if r.requests.count == 4 { Self.check(r.requests) }
    }

    @Test func manyPipelinedRequestsInOneRead() {
        let one = "GET /x HTTP/1.1\r\nHost: x\r\n\r\n"
        let r = parseAll(String(repeating: one, count: 1000) + Self.mixedPipeline)
        #expect(r.error == nil)
        #expect(r.requests.count == 1004)
        Self.check(Array(r.requests.suffix(4)))
    }

    @Test func errorsAreFoundAtEveryBoundaryToo() {
        let input = Array("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        for cut in 1..<input.count {
            #expect(parseAll(input, splitAt: [cut]).error?.status == 400)
        }
    }
}
