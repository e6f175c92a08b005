import Testing
@testable import HTTPCore

@Suite("Field value lists split at separator bytes, OWS trimmed")
struct FieldValueListTests {
    private func members(_ value: String, _ separator: Unicode.Scalar = ",", maxSplits: Int = .max,
                         omittingEmpty: Bool = true, trimmingOWS: Bool = true) -> [String] {
        value.fieldMembers(separatedBy: separator, maxSplits: maxSplits, omittingEmpty: omittingEmpty, trimmingOWS: trimmingOWS).map(String.init)
    }

    @Test func emptyValues() {
        #expect(members("").isEmpty)
        #expect(members("", omittingEmpty: false) == [""])
        #expect(members(",,").isEmpty)
        #expect(members(",,", omittingEmpty: false) == ["", "", ""])
        #expect(members(" ,\t", omittingEmpty: false) == ["", ""])
        #expect("".fieldMembers(separatedBy: ",").last == nil)
    }

    @Test func owsIsTrimmedAndNothingElse() {
        #expect(members(" gzip ,\tbr\t, zstd") == ["gzip", "br", "zstd"])
        #expect(members(" gzip ,\tbr\t", trimmingOWS: false) == [" gzip ", "\tbr\t"])
        // Only SP and HTAB: a no-break space or a line feed is content.
        #expect(members("\u{A0}a\u{A0}, \nb") == ["\u{A0}a\u{A0}", "\nb"])
        #expect(" \t x y \t ".trimmingOWS() == "x y")
        #expect(" \t ".trimmingOWS() == "")
    }

    /// Emptiness is judged before trimming, as `split(omittingEmptySubsequences:)` does.
    @Test func emptyMembers() {
        #expect(members("a,,b, ,c,") == ["a", "b", "", "c"])
        #expect(members("a,,b, ,c,", omittingEmpty: false) == ["a", "", "b", "", "c", ""])
        #expect(members(",a", omittingEmpty: false) == ["", "a"])
    }

    @Test func maxSplitsAndPairs() {
        #expect(members("a=b=c", "=", maxSplits: 1) == ["a", "b=c"])
        #expect(members("a = b = c ", "=", maxSplits: 1) == ["a", "b = c"])
        #expect(members("abc", "=", maxSplits: 0) == ["abc"])
        #expect(members("=a=b", "=", maxSplits: 1) == ["a", "b"])
        #expect(members("=a=b", "=", maxSplits: 1, omittingEmpty: false) == ["", "a=b"])
        #expect(members("a=", "=", maxSplits: 1) == ["a"])
        #expect(members("a=", "=", maxSplits: 1, omittingEmpty: false) == ["a", ""])
        let pair = "max-age = \"60\"".fieldPair(separatedBy: "=")
        #expect(pair.first == "max-age" && pair.second == "\"60\"")
        let alone = "no-store".fieldPair(separatedBy: "=")
        #expect(alone.first == "no-store" && alone.second == nil)
        let none = "=".fieldPair(separatedBy: "=")
        #expect(none.first == nil && none.second == nil)
        let kept = "=".fieldPair(separatedBy: "=", omittingEmpty: false)
        #expect(kept.first == "" && kept.second == "")
    }

    /// `",\u{0301}"` is one Character, so `String.split` does not split there; every HTTP recipient does.
    @Test func aCombiningMarkRightAfterASeparator() {
        #expect("gzip,\u{0301}br".split(separator: ",").count == 1)  // the Character split this replaces
        #expect(members("gzip,\u{0301}br") == ["gzip", "\u{0301}br"])
        #expect(members("a;\u{0301}b;\u{0301}", ";") == ["a", "\u{0301}b", "\u{0301}"])
        #expect(members("q=\u{0301}1", "=", maxSplits: 1) == ["q", "\u{0301}1"])
        // A space before a combining mark is still OWS, on both sides.
        #expect(members("a, \u{0301}b \u{0301}, c") == ["a", "\u{0301}b \u{0301}", "c"])
        #expect(" \u{0301}x".trimmingOWS().utf8.elementsEqual("\u{0301}x".utf8))
        // Members begin and end exactly at the separator bytes.
        let value = "x,\u{0301}\u{0302}y,z"
        let second = Array(value.fieldMembers(separatedBy: ","))[1]
        #expect(value.utf8.distance(from: value.startIndex, to: second.startIndex) == 2)
        #expect(Array(second.utf8) == Array("\u{0301}\u{0302}y".utf8))
        #expect(value.fieldMembers(separatedBy: ",").last == "z")
    }

    @Test func nonASCIIScalarsAreContent() {
        // Multi-byte scalars whose continuation bytes could look like nothing ASCII, emoji with ZWJ,
        // a replacement character from invalid UTF-8, a Greek question mark (canonically ";").
        let odd = String(decoding: [0x61, 0xFF, 0x2C, 0xC3, 0xA9, 0x3B, 0x62], as: UTF8.self)
        #expect(members(odd) == ["a\u{FFFD}", "é;b"])
        #expect(members(odd, ";") == ["a\u{FFFD},é", "b"])
        #expect(members("👩‍👩‍👧,日本, \u{037E} ") == ["👩‍👩‍👧", "日本", "\u{037E}"])
        #expect(members("a\u{037E}b", ";") == ["a\u{037E}b"])
        #expect(members("\u{0301},\u{0301}") == ["\u{0301}", "\u{0301}"])
    }

    /// On ASCII input the members are exactly `split` + OWS trimming, for every option: every string
    /// of up to 5 characters from a small alphabet.
    @Test func asciiMatchesSplitThenTrim() {
        let alphabet = Array("a,;= \t")
        var values = [""]
        var previous = [""]
        for _ in 0..<5 {
            previous = previous.flatMap { prefix in alphabet.map { prefix + String($0) } }
            values += previous
        }
        for value in values {
            for separator in [",", ";", "="] as [Unicode.Scalar] {
                for maxSplits in [0, 1, 2, Int.max] {
                    for omittingEmpty in [true, false] {
                        let expected = value.split(separator: Character(separator), maxSplits: maxSplits, omittingEmptySubsequences: omittingEmpty)
                        let raw = members(value, separator, maxSplits: maxSplits, omittingEmpty: omittingEmpty, trimmingOWS: false)
                        #expect(raw == expected.map(String.init), "\(value.debugDescription) \(separator) \(maxSplits) \(omittingEmpty)")
                        let trimmed = members(value, separator, maxSplits: maxSplits, omittingEmpty: omittingEmpty)
                        #expect(trimmed == expected.map { String($0.trimmingOWS()) })
                    }
                }
            }
        }
    }
}
