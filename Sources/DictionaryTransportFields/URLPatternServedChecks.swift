/// The stricter check for patterns a server configures (rules' `match`, `resources`, `compress`;
/// out-of-band dictionaries' `match` and `advertiseOn`; quick mode's patterns): besides what
/// ``URLPattern`` refuses, patterns that are valid URLPattern syntax but can never match what the
/// operator meant are refused with the reason. Clients keep the plain rules (a server's pattern they
/// receive is judged as browsers judge it).
extension URLPattern {
    /// Validates `match` as a configured pattern (no base URL: it starts with `/`). Refused as
    /// ``URLPatternError/Kind/neverMatches``:
    /// - a character outside printable ASCII, or a space: `Use-As-Dictionary`'s `match` is an
    ///   sf-string (printable ASCII only, so such a dictionary is never advertised), and a request path
    ///   carries such bytes percent-encoded: write them so (`%C3%A9`, `%20`);
    /// - a literal `\` (`\\`): URL parsers read `\` in an http(s) path as `/`, so no request path holds
    ///   one; and a `\` before a character that needs no escaping (only `+*?:{}()\` do), which reads
    ///   as a path separator typed the Windows way;
    /// - a `?` modifier followed by more text in its segment (`/a/*?q=1`): it reads as a query, and
    ///   dcserve matches paths only (a literal `?` is `\?`).
    public static func validateServed(_ match: String) throws(URLPatternError) {
        try validate(match)
        let scalars = Array(match.unicodeScalars)
        var i = 0
        while i < scalars.count {
            let c = scalars[i]
            if c.value < 0x21 || c.value > 0x7E {
                let name = c == " " ? "a space" : "U+\(String(c.value, radix: 16, uppercase: true).leftPadded(to: 4))"
                throw URLPatternError(.neverMatches, pattern: match, offset: i,
                                      "\(name) can never match: request paths carry it percent-encoded and Use-As-Dictionary carries ASCII only; write it percent-encoded (e.g. `%20`, `%C3%A9`)")
            }
            if c == "\\", i + 1 < scalars.count {
                let next = scalars[i + 1]
                if next == "\\" {
                    throw URLPatternError(.neverMatches, pattern: match, offset: i,
                                          "a literal `\\` can never match: URL parsers read `\\` in a path as `/`; use `/`")
                }
                if !"+*?:{}()".unicodeScalars.contains(next) {
                    throw URLPatternError(.neverMatches, pattern: match, offset: i,
                                          "`\\` before `\(next)` escapes nothing (only `+*?:{}()\\` need it); if it is meant as a path separator, use `/`")
                }
                i += 2
                continue
            }
            i += 1
        }
        // A `?` modifier directly followed by text of the same segment reads as a query string.
        let tokens = try URLPatternCompiler.tokenize(match, source: match)
        for (k, (token, offset)) in tokens.enumerated() where token == .otherModifier("?") && k + 1 < tokens.count {
            let textFollows: Bool
            switch tokens[k + 1].0 {
            case .char(let c): textFollows = c != "/"
            case .escapedChar, .name: textFollows = true
            default: textFollows = false
            }
            if textFollows {
                throw URLPatternError(.neverMatches, pattern: match, offset: offset,
                                      "`?` followed by more text reads as a query string, which never matches: dcserve matches paths only (a literal `?` is `\\?`)")
            }
        }
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}
