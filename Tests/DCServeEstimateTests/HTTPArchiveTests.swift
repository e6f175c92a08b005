@testable import DCServeEstimate
import Foundation
import Testing

/// HAR reading: entries in time order, bodies as recorded (text, base64) or named as missing, and a
/// clear error for a file that is not JSON, is truncated, or is JSON but not a HAR.
@Suite struct HTTPArchiveTests {
    static func har(_ entries: [String]) -> [UInt8] {
        Array(#"{"log":{"version":"1.2","creator":{"name":"test","version":"1"},"entries":["#.utf8)
            + Array(entries.joined(separator: ",").utf8) + Array("]}}".utf8)
    }

    static func entry(_ time: String, _ url: String, content: String, method: String = "GET", status: Int = 200) -> String {
        #"{"startedDateTime":"\#(time)","time":1,"request":{"method":"\#(method)","url":"\#(url)","httpVersion":"HTTP/1.1","headers":[{"name":"Authorization","value":"Bearer a"}]},"response":{"status":\#(status),"statusText":"OK","httpVersion":"HTTP/1.1","headers":[{"name":"Cache-Control","value":"no-cache"}],"content":\#(content)}}"#
    }

    @Test func entriesAreOrderedByStartTimeAndKeepTheirFields() throws {
        let archive = try HTTPArchive.parse(Self.har([
            Self.entry("2026-11-27T10:00:02.500+00:00", "http://api.test:8000/b?x=1", content: #"{"size":2,"text":"bb"}"#),
            Self.entry("2026-11-27T11:00:01Z", "http://api.test:8000/a", content: #"{"size":1,"text":"a","mimeType":"text/plain"}"#),
        ]))
        #expect(archive.creator == "test 1")
        #expect(archive.exchanges.map(\.pathAndQuery) == ["/b?x=1", "/a"])
        #expect(archive.exchanges[0].origin == "http://api.test:8000")
        #expect(archive.exchanges[0].index == 0 && archive.exchanges[1].index == 1)
        #expect(archive.exchanges[0].body == .text(Array("bb".utf8)))
        #expect(archive.exchanges[1].requestField("authorization") == "Bearer a")
        #expect(archive.exchanges[1].started.timeIntervalSince(archive.exchanges[0].started) == 3598.5)
    }

    @Test func equalTimesKeepFileOrder() throws {
        let archive = try HTTPArchive.parse(Self.har((0..<5).map {
            Self.entry("2026-11-27T10:00:00Z", "http://h/\($0)", content: #"{"size":0,"text":""}"#)
        }))
        #expect(archive.exchanges.map(\.path) == ["/0", "/1", "/2", "/3", "/4"])
    }

    @Test func base64BodiesAreDecodedAndMissingOnesNamed() throws {
        let archive = try HTTPArchive.parse(Self.har([
            Self.entry("2026-11-27T10:00:00Z", "http://h/bin", content: #"{"size":4,"text":"AAEC/w==","encoding":"base64"}"#),
            Self.entry("2026-11-27T10:00:01Z", "http://h/missing", content: #"{"size":1234,"mimeType":"application/json"}"#),
            Self.entry("2026-11-27T10:00:02Z", "http://h/bad64", content: #"{"size":3,"text":"%%%","encoding":"base64"}"#),
            Self.entry("2026-11-27T10:00:03Z", "http://h/empty", content: #"{"size":0}"#, status: 204),
        ]))
        #expect(archive.exchanges[0].body == .base64([0, 1, 2, 255]))
        #expect(archive.exchanges[1].body == .missing("body not captured (content.size 1234, no content.text)"))
        #expect(archive.exchanges[2].body == .missing("content.text is marked base64 but does not decode"))
        #expect(archive.exchanges[3].body == .text([]))
    }

    @Test func badInputGetsAClearError() {
        #expect(throws: HTTPArchiveError.notJSON("the file is empty")) { try HTTPArchive.parse([]) }
        let whole = Self.har([Self.entry("2026-11-27T10:00:00Z", "http://h/a", content: #"{"size":1,"text":"a"}"#)])
        do {
            _ = try HTTPArchive.parse(Array(whole.prefix(whole.count / 2)))
            Issue.record("a truncated file parsed")
        } catch {
            #expect(error.description.hasPrefix("truncated HAR file: the JSON ends"), "\(error)")
        }
        do {
            _ = try HTTPArchive.parse(Array("hello, world".utf8))
            Issue.record("text parsed")
        } catch {
            #expect(error.description.hasPrefix("not a HAR file: not JSON"), "\(error)")
        }
        #expect(throws: HTTPArchiveError.notHAR("no \"log\" object at the top level")) {
            try HTTPArchive.parse(Array(#"{"name":"package.json","version":"1.0.0"}"#.utf8))
        }
        #expect(throws: HTTPArchiveError.notHAR("the top level is not a JSON object")) { try HTTPArchive.parse(Array("[1,2]".utf8)) }
        #expect(throws: HTTPArchiveError.invalidEntry(0, "request.url is not an absolute URL")) {
            try HTTPArchive.parse(Self.har([Self.entry("2026-11-27T10:00:00Z", "/relative", content: #"{"size":0}"#)]))
        }
        #expect(throws: HTTPArchiveError.invalidEntry(0, "startedDateTime \"yesterday\" is not an ISO 8601 date")) {
            try HTTPArchive.parse(Self.har([Self.entry("yesterday", "http://h/", content: #"{"size":0}"#)]))
        }
    }

    @Test func iso8601Forms() {
        let base = ISO8601Time.parse("2026-11-27T10:00:00Z")!
        #expect(ISO8601Time.parse("2026-11-27T10:00:00.250Z")!.timeIntervalSince(base) == 0.25)
        #expect(ISO8601Time.parse("2026-11-27T11:00:00.123456+01:00")!.timeIntervalSince(base) > 0.123)
        #expect(ISO8601Time.parse("2026-11-27T05:30:00-0430")!.timeIntervalSince(base) == 0)
        #expect(ISO8601Time.parse("2026-02-30T10:00:00Z") == nil)
        #expect(ISO8601Time.parse("2026-11-27T10:00:00Zjunk") == nil)
    }

    @Test func endpointGroupsReplaceIdentifiers() {
        #expect(EndpointGroup.of(path: "/api/chats/17/messages") == "/api/chats/:id/messages")
        #expect(EndpointGroup.of(path: "/u/3f1c0a9e5b7d2c41/x?since=3") == "/u/:id/x")
        #expect(EndpointGroup.of(path: "/o/123e4567-e89b-12d3-a456-426614174000") == "/o/:id")
        #expect(EndpointGroup.of(path: "/static/app.v1.js") == "/static/app.v1.js")
        #expect(EndpointGroup.of(path: "/latest_news") == "/latest_news")
        #expect(EndpointGroup.of(path: "/") == "/")
    }
}
