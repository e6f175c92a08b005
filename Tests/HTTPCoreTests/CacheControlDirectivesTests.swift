import Testing
@testable import HTTPCore

@Suite("Cache-Control read as directives: one parser for every reader")
struct CacheControlDirectivesTests {
    private func read(_ value: String) -> [String] {
        value.cacheControlDirectives.map { d in d.argument.map { "\(d.name)=\($0)" } ?? String(d.name) }
    }

    @Test func namesAndArgumentsWithoutOWS() {
        #expect(read("max-age=60, no-store") == ["max-age=60", "no-store"])
        #expect(read(" Private , max-age = \"60\" ,,") == ["Private", "max-age=\"60\""])
        #expect(read("").isEmpty)
        #expect(read(" , ") == ["", ""])
    }

    /// The first `=` splits; commas split even inside quotes (as every reader did before).
    @Test func separatorsAreBytes() {
        #expect(read("private=\"Set-Cookie, X\"") == ["private=\"Set-Cookie", "X\""])
        #expect(read("a=b=c") == ["a=b=c"])
        #expect(read("max-age=60,\u{0301}x") == ["max-age=60", "\u{0301}x"])
    }

    /// Empty text before `=` is skipped: a malformed member reads as the restrictive directive it spells.
    @Test func emptyNameIsSkipped() {
        #expect(read("=private") == ["private"])
        #expect(read("=") == [""])
        #expect(read("max-age=") == ["max-age"])
    }

    @Test func namesCompareIgnoringASCIICase() {
        let d = Array("No-Transform, MAX-AGE=1".cacheControlDirectives)
        #expect(d[0].isNamed("no-transform") && !d[0].isNamed("no-store"))
        #expect(d[1].isNamed("max-age") && !d[1].isNamed("max-ag"))
        // The Kelvin sign lower-cases to "k" in Unicode, not in ASCII.
        #expect(!Array("\u{212A}".cacheControlDirectives)[0].isNamed("k"))
    }

    @Test func quotedArgumentsAreUnquotedOnce() {
        func unquoted(_ value: String) -> String? { value.cacheControlDirectives.first { _ in true }?.unquotedArgument.map(String.init) }
        #expect(unquoted("max-age=\"60\"") == "60")
        #expect(unquoted("max-age=60") == "60")
        #expect(unquoted("max-age=\"") == "\"")
        #expect(unquoted("max-age=\"\"") == "")
        #expect(unquoted("max-age=\"\"60\"\"") == "\"60\"")
        #expect(unquoted("max-age") == nil)
    }
}
