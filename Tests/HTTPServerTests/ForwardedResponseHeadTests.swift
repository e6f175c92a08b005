@testable import HTTPServer
import HTTPCore
import HTTPTypes
import Testing

/// A forwarded head (received bytes, removals, additions) is written exactly as the `HTTPResponse`
/// it stands for, answers field questions as that response's fields do, and becomes that response
/// once code changes its head.
@Suite struct ForwardedResponseHeadTests {
    static let heads = [
        "HTTP/1.1 200 OK\r\nDate: Sat, 28 Nov 2026 00:00:00 GMT\r\nServer: up\r\nContent-Length: 3\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nETag: \"e\"\r\n\r\n",
        "HTTP/1.1 203 Fine Then\r\ncontent-type: text/plain\r\ncontent-TYPE: charset=x\r\nTransfer-Encoding: chunked\r\nx-end: kept\r\n\r\n",
        "HTTP/1.1 404 \r\nVia: 1.1 a\r\nvia: 1.0 b\r\nCACHE-CONTROL: no-transform\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.0 299 Odd\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nX-Obs: caf\u{E9}\r\nconnection: close\r\nContent-Length: 0\r\n\r\n",
    ]

    static func parse(_ raw: String, obsText: Bool = false) throws -> ParsedResponseHead {
        var bytes = Array(raw.utf8)
        if obsText, let i = bytes.firstIndex(of: 0xC3) { bytes.replaceSubrange(i..<i + 2, with: [0xE9]) }  // Latin-1 é
        var parser = ResponseParser()
        let (_, event) = try bytes.withUnsafeBytes { try parser.parse($0) }
        guard case .head(let head) = event else { throw ParseFailure() }
        return head
    }
    struct ParseFailure: Error {}

    /// The head with its second field removed and two fields appended.
    static func edited(_ head: ParsedResponseHead) -> ForwardedResponseHead {
        var forwarded = ForwardedResponseHead(head)
        forwarded.removeField(at: 1)
        forwarded.append(HTTPField(name: HTTPField.Name("Via")!, value: "1.1 dcserve"))
        forwarded.append(HTTPField(name: .vary, value: "Accept-Encoding"))
        return forwarded
    }

    static func withoutDate(_ bytes: [UInt8]) -> String {
        String(decoding: bytes, as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix("Date: ") || $0.hasSuffix("00:00:00 GMT") }.joined(separator: "\r\n")
    }

    @Test(arguments: heads)
    func writtenAsTheResponseItStandsFor(raw: String) throws {
        for obsText in [false, true] {
            let forwarded = Self.edited(try Self.parse(raw, obsText: obsText))
            for (framing, keepAlive, version) in [(BodyFraming.contentLength(5), true, HTTPVersion.http1_1),
                                                  (.chunked, false, .http1_1), (.none, true, .http1_0)] {
                var direct: [UInt8] = [], built: [UInt8] = []
                ResponseWriter.appendHead(forwarded, framing: framing, keepAlive: keepAlive, requestVersion: version,
                                          serverLine: Array("Server: t\r\n".utf8), into: &direct)
                ResponseWriter.appendHead(forwarded.response, framing: framing, keepAlive: keepAlive, requestVersion: version,
                                          serverLine: Array("Server: t\r\n".utf8), into: &built)
                #expect(Self.withoutDate(direct) == Self.withoutDate(built))
                #expect(!String(decoding: direct, as: UTF8.self).lowercased().contains("keep-alive: timeout"))
            }
        }
    }

    @Test(arguments: heads)
    func answersAsTheBuiltFieldsDo(raw: String) throws {
        let forwarded = Self.edited(try Self.parse(raw))
        let fields = forwarded.response.headerFields
        let response = HTTPServerResponse(forwarded: forwarded)
        #expect(response.statusCode == forwarded.response.status.code)
        for name: HTTPField.Name in [.contentType, .setCookie, .cacheControl, .vary, HTTPField.Name("Via")!, .eTag,
                                     .contentLength, .connection, HTTPField.Name("x-end")!, .date] {
            #expect(response.headerValue(name) == fields[name], "\(name)")
            #expect(response.headerValues(name) == fields[values: name], "\(name)")
            #expect(response.hasHeader(name) == fields.contains(name), "\(name)")
        }
    }

    @Test func changingTheHeadReplacesTheForwardedOne() throws {
        var response = HTTPServerResponse(forwarded: ForwardedResponseHead(try Self.parse(Self.heads[0])), body: .bytes([1]))
        response.appendHeader(HTTPField(name: .vary, value: "Accept-Encoding"))
        #expect(response.forwarded != nil)
        #expect(response.head.headerFields[.vary] == "Accept-Encoding")
        response.head.headerFields[.eTag] = "\"other\""
        #expect(response.forwarded == nil)
        #expect(response.headerValue(.eTag) == "\"other\"")
        #expect(response.headerValue(.vary) == "Accept-Encoding")
        #expect(response.headerValue(.server) == "up")
    }

    @Test func removalsBeyondSixtyFourFields() throws {
        let raw = "HTTP/1.1 200 OK\r\n" + (0..<70).map { "X-F\($0): \($0)\r\n" }.joined() + "\r\n"
        var limits = ResponseParserLimits()
        limits.maxHeaderCount = 100
        var parser = ResponseParser(limits: limits)
        let bytes = Array(raw.utf8)
        let (_, event) = try bytes.withUnsafeBytes { try parser.parse($0) }
        guard case .head(let head) = event else { Issue.record("no head"); return }
        var forwarded = ForwardedResponseHead(head)
        for i in [3, 63, 64, 69] { forwarded.removeField(at: i) }
        let names = forwarded.response.headerFields.map(\.name.rawName)
        #expect(names.count == 66)
        for i in [3, 63, 64, 69] { #expect(!names.contains("X-F\(i)")) }
        #expect(names.contains("X-F65"))
    }
}
