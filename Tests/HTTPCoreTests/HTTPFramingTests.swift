import Foundation
import Testing
@testable import HTTPCore

@Suite("HTTP/1 framing pieces: dates, chunked coding")
struct HTTPFramingTests {
    @Test func httpDates() {
        #expect(HTTPDate.format(784111777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == 784111777)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == nil)
        for t in [0, 951782400, 1_700_000_000, 4_102_444_800] { #expect(HTTPDate.parse(HTTPDate.format(t)) == t) }
    }

    /// The pure-Swift formatter (no gmtime_r) agrees with Foundation's, weekday included, from 1970 to
    /// past 2100 (leap years, century rules) and at each second of a day's edges.
    @Test func httpDateFormatMatchesFoundation() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        var t = 0
        while t < 4_200_000_000 {
            #expect(HTTPDate.format(t) == formatter.string(from: Date(timeIntervalSince1970: TimeInterval(t))), "\(t)")
            #expect(HTTPDate.parse(HTTPDate.format(t)) == t)
            t += 3_999_937  // about 46 days, coprime with a day and a week
        }
        for t in [86_399, 86_400, 951_868_799, 951_868_800, 4_107_542_399, 4_107_542_400] {
            #expect(HTTPDate.format(t) == formatter.string(from: Date(timeIntervalSince1970: TimeInterval(t))), "\(t)")
        }
    }

    @Test func chunkFraming() {
        var chunk: [UInt8] = []
        ChunkedCoding.appendChunk(Array(repeating: 0x61, count: 26), into: &chunk)
        #expect(String(decoding: chunk, as: UTF8.self) == "1a\r\n" + String(repeating: "a", count: 26) + "\r\n")
        var empty: [UInt8] = []
        ChunkedCoding.appendChunk([UInt8](), into: &empty)
        #expect(empty.isEmpty)
        for (value, text) in [(0, "0"), (1, "1"), (15, "f"), (16, "10"), (0xabcdef, "abcdef"), (Int.max, "7fffffffffffffff")] {
            var b: [UInt8] = []
            ChunkedCoding.appendHex(value, into: &b)
            #expect(String(decoding: b, as: UTF8.self) == text)
        }
    }

    @Test func chunkSizeLines() {
        func parse(_ s: String) -> ChunkedCoding.SizeLine {
            Array(s.utf8).withUnsafeBytes { ChunkedCoding.parseSizeLine($0) }
        }
        #expect(parse("1a") == .size(26))
        #expect(parse("0") == .size(0))
        #expect(parse("FF;name=value") == .size(255))
        #expect(parse("10 ; a=b") == .size(16))
        #expect(parse("") == .invalidSize)
        #expect(parse("x") == .invalidSize)
        #expect(parse("1 2") == .invalidSize)
        #expect(parse("-1") == .invalidSize)
        #expect(parse("5;a\u{01}") == .invalidExtension)
        #expect(parse("fffffffffffffffff") == .tooLarge)
    }
}
