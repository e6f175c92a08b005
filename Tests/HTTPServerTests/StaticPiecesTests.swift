import Testing
import HTTPTypes
@testable import HTTPServer

@Suite("Path normalisation, byte ranges, dates, ETags, response heads")
struct StaticPiecesTests {
    @Test func documentPathNormalisesInsideRoot() throws {
        #expect(try DocumentPath.segments(of: "/").segments == [])
        #expect(try DocumentPath.segments(of: "/a/./b/../c%20d").segments == ["a", "c d"])
        #expect(try DocumentPath.segments(of: "/a/").trailingSlash)
        #expect(try DocumentPath.segments(of: "//a//b").segments == ["a", "b"])
    }

    @Test func documentPathRejectsTraversal() {
        for path in ["/..", "/../etc/passwd", "/a/../../b", "/%2e%2e/x", "/%2E%2E%2Fetc", "/a/%2e%2e/%2e%2e/b"] {
            #expect(throws: DocumentPath.Failure.escapesRoot, "\(path)") { try DocumentPath.segments(of: path[...]) }
        }
        #expect(throws: DocumentPath.Failure.nulByte) { try DocumentPath.segments(of: "/a%00.html") }
        #expect(throws: DocumentPath.Failure.malformedEscape) { try DocumentPath.segments(of: "/a%2") }
        #expect(throws: DocumentPath.Failure.malformedEscape) { try DocumentPath.segments(of: "/a%zz") }
        #expect(throws: DocumentPath.Failure.notOriginForm) { try DocumentPath.segments(of: "a") }
    }

    @Test func byteRanges() {
        #expect(ByteRange.parse("bytes=0-9", size: 100) == .satisfiable(0..<10))
        #expect(ByteRange.parse("bytes=90-", size: 100) == .satisfiable(90..<100))
        #expect(ByteRange.parse("bytes=-10", size: 100) == .satisfiable(90..<100))
        #expect(ByteRange.parse("bytes=-1000", size: 100) == .satisfiable(0..<100))
        #expect(ByteRange.parse("bytes=50-1000", size: 100) == .satisfiable(50..<100))
        #expect(ByteRange.parse("bytes=100-", size: 100) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=-0", size: 100) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=0-1,5-6", size: 100) == .ignored)
        #expect(ByteRange.parse("bytes=5-1", size: 100) == .ignored)
        #expect(ByteRange.parse("items=0-1", size: 100) == .ignored)
        #expect(ByteRange.parse("bytes=a-b", size: 100) == .ignored)
    }

    @Test func etagMatching() {
        #expect(StaticFileHandler.etagListMatches(["\"abc\""], "\"abc\""))
        #expect(StaticFileHandler.etagListMatches(["\"x\", W/\"abc\""], "\"abc\""))
        #expect(StaticFileHandler.etagListMatches(["*"], "\"abc\""))
        #expect(!StaticFileHandler.etagListMatches(["\"abd\""], "\"abc\""))
        // Members split at comma bytes: `,\u{0301}` is one Character.
        #expect(StaticFileHandler.etagListMatches(["\"abc\",\u{0301}\"x\""], "\"abc\""))
        #expect(!StaticFileHandler.etagListMatches(["\"x\",\u{0301}\"abc\""], "\"abc\""))
    }

    @Test func mimeTypes() {
        #expect(MIMETypes.type(forPath: "a/b.HTML") == "text/html; charset=utf-8")
        #expect(MIMETypes.type(forPath: "x.css") == "text/css; charset=utf-8")
        #expect(MIMETypes.type(forPath: "noext") == "application/octet-stream")
        #expect(MIMETypes.type(forPath: "dir.d/noext") == "application/octet-stream")
    }

    @Test func responseHead() {
        var out: [UInt8] = []
        ResponseWriter.appendHead(.init(status: .ok, headerFields: [.contentType: "text/plain", .contentLength: "999"]),
                                  framing: .contentLength(5), keepAlive: false, requestVersion: .http1_1,
                                  serverLine: Array("Server: t\r\n".utf8), into: &out)
        let text = String(decoding: out, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nDate: "))
        #expect(text.hasSuffix(" GMT\r\nServer: t\r\nContent-Length: 5\r\nConnection: close\r\n\r\n"))
        #expect(!text.contains("999"))
    }

    @Test func preparedHeadsSendTheSameBytesAndDetachOnChange() {
        let head = HTTPResponse(status: .ok, headerFields: [.contentType: "text/plain", .vary: "Accept-Encoding",
                                                            .connection: "close", .server: "own"])
        for (framing, keepAlive, version) in [(BodyFraming.contentLength(5), true, HTTPVersion.http1_1),
                                              (.chunked, false, .http1_1), (.none, true, .http1_0)] {
            var plain: [UInt8] = [], prepared: [UInt8] = []
            ResponseWriter.appendHead(head, framing: framing, keepAlive: keepAlive, requestVersion: version,
                                      serverLine: Array("Server: t\r\n".utf8), into: &plain)
            ResponseWriter.appendHead(PreparedHead(head), framing: framing, keepAlive: keepAlive, requestVersion: version,
                                      serverLine: Array("Server: t\r\n".utf8), into: &prepared)
            #expect(prepared == plain)
        }
        var response = HTTPServerResponse(prepared: PreparedHead(head), body: .bytes([1]))
        #expect(response.prepared != nil)
        response.body = .bytes([2])
        #expect(response.prepared != nil)
        response.head.headerFields[.vary] = "Accept-Encoding, Available-Dictionary"
        #expect(response.prepared == nil)
    }
}
