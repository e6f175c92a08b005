@testable import HTTPServer
import Testing

/// The access-log line's exact text: numbers, the millisecond fraction's zero padding, the note.
@Suite struct AccessLogLineTests {
    struct Note: AccessLogNote { let description: String }

    @Test func formatsEveryPart() {
        #expect(AccessLog.line(method: "GET", target: "/index.html", status: 200, bytes: 1024, micros: 213,
                               connectionID: 42, note: nil) == "GET /index.html 200 1024B 0.213ms conn=42")
        #expect(AccessLog.line(method: "PROPFIND", target: "/a?b=c", status: 404, bytes: 0, micros: 12_005,
                               connectionID: 0, note: Note(description: "decision=dcz@0123456789abcdef rule=assets"))
                == "PROPFIND /a?b=c 404 0B 12.005ms conn=0 decision=dcz@0123456789abcdef rule=assets")
        #expect(AccessLog.line(method: "GET", target: "/", status: 200, bytes: .max, micros: .max, connectionID: .max,
                               note: Note(description: "")) == "GET / 200 9223372036854775807B 18446744073709551.615ms conn=18446744073709551615 ")
    }

    @Test func excludedPathsIgnoreTheQueryAndCompareWholePaths() {
        let log = AccessLog(excludedPaths: ["/healthz", "/readyz"])
        #expect(log.isExcluded("/healthz"))
        #expect(log.isExcluded("/readyz?verbose=1"))
        #expect(!log.isExcluded("/healthz2"))
        #expect(!log.isExcluded("/health"))
        #expect(!log.isExcluded("/x?/healthz"))
    }
}
