import Foundation
import DictionaryTransport
import PropertyBased
import Testing
import TestSupport

private let base = URLPatternBase(url: "https://example.com/static/app.v1.js")!

private func pattern(_ match: String) throws -> URLPattern { try URLPattern(match, base: base) }

@Suite struct URLPatternMatchingTests {
    @Test(arguments: [
        // (pattern, path, expected)
        ("/static/app.js", "/static/app.js", true),
        ("/static/app.js", "/static/app.jsx", false),
        ("/static/app.js", "/static/app.j", false),
        ("/static/app.*.js", "/static/app.v2.js", true),
        ("/static/app.*.js", "/static/app..js", true),  // `*` matches the empty string
        ("/static/app.*.js", "/static/app.v2/evil.js", true),  // `*` crosses `/`
        ("/product/*", "/product/", true),
        ("/product/*", "/product/a/b/c", true),
        ("/product/*", "/product", false),
        ("/app/*/main.js", "/app/v7/main.js", true),
        ("/app/*/main.js", "/app/main.js", false),
        ("/users/:id", "/users/42", true),
        ("/users/:id", "/users/", false),  // :name needs at least one character
        ("/users/:id", "/users/4/2", false),  // :name stops at `/`
        ("/users/:id/profile", "/users/42/profile", true),
        ("/files/:name?", "/files", true),  // the `/` prefix is optional with the part
        ("/files/:name?", "/files/a", true),
        ("/files/:name?", "/files/", false),
        ("/files/:name?", "/files/a/b", false),
        ("/files/:path+", "/files/a/b/c", true),
        ("/files/:path+", "/files", false),
        ("/files/:path*", "/files", true),
        ("/files/:path*", "/files/a/b", true),
        ("/files/:path*", "/files/", false),
        ("/books{/old}?", "/books", true),
        ("/books{/old}?", "/books/old", true),
        ("/books{/old}?", "/books/new", false),
        ("/a{-:v}?.js", "/a.js", true),
        ("/a{-:v}?.js", "/a-7.js", true),
        ("/a{-:v}+.js", "/a-1-2-3.js", true),
        ("/a{-:v}+.js", "/a.js", false),
        ("/a{-:v}*.js", "/a.js", true),
        ("/x/{:section}/y", "/x/s/y", true),
        ("/x/{*}", "/x/anything/at/all", true),
        ("/d/**", "/d/a/b", true),  // `*` followed by the `*` modifier
        ("/a/\\*", "/a/*", true),  // escaped `*` is literal
        ("/a/\\*", "/a/b", false),
        ("/t\\:x", "/t:x", true),
        ("/q\\?", "/q?", false),  // the request path ends at `?`: `/q` does not match `/q?`
        ("/caf\u{E9}/*", "/caf%C3%A9/menu", true),  // fixed text is percent-encoded
        ("/caf%C3%A9/*", "/caf%C3%A9/menu", true),
        ("/caf%C3%A9/*", "/café/menu", false),  // request paths are matched percent-encoded
        ("/Static/*", "/static/a", false),  // case-sensitive
        ("/static/*", "/static/a?v=1", true),  // the query is not part of the match
        ("https://example.com/static/*", "/static/a", true),  // same-origin absolute
        ("https://EXAMPLE.com:443/s/*", "/s/a", true),
        ("app.*.js", "/static/app.v3.js", true),  // relative to the dictionary's directory
        ("app.*.js", "/app.v3.js", false),
        ("*", "/static/anything", true),
    ])
    func matches(match: String, path: String, expected: Bool) throws {
        #expect(try pattern(match).matches(path: path) == expected, "\(match) vs \(path)")
    }

    /// Found by the url-pattern fuzzer: an absolute pattern whose path starts with `//`
    /// was accepted, but its resolved pathname (what the store keeps) did not parse again.
    @Test func everyAcceptedPatternsPathnameParsesAgain() throws {
        for match in ["https://example.com//*", "https://example.com//x/*.js", "https://example.com///"] {
            #expect(throws: URLPatternError.self) { try URLPattern(match, base: base) }
        }
        let oddBase = try #require(URLPatternBase(url: "https://example.com//static/app.v1.js"))
        #expect(throws: URLPatternError.self) { try URLPattern("app.*.js", base: oddBase) }
        for match in ["https://example.com/static/*", "app.*.js", "/x/*"] {
            let pattern = try URLPattern(match, base: base)
            #expect(try URLPattern(pattern.pathname, base: nil).pathname == pattern.pathname)
        }
    }

    @Test func relativePatternsResolveAgainstTheDictionaryDirectory() throws {
        #expect(try pattern("app.*.js").pathname == "/static/app.*.js")
        let special = URLPatternBase(scheme: "https", host: "example.com", path: "/a+b/dict")
        #expect(try URLPattern("*.js", base: special).pathname == "/a\\+b/*.js")
        #expect(try URLPattern("*.js", base: special).matches(path: "/a+b/x.js"))
    }

    @Test func hostileInputsMatchInLinearTime() throws {
        // A backtracking matcher would take exponential time here; the NFA simulation does not.
        let p = try pattern("/*a*a*a*a*a*a*a*a*a*a*b")
        #expect(!p.matches(path: "/" + String(repeating: "a", count: 5000)))
        #expect(p.matches(path: "/" + String(repeating: "a", count: 5000) + "b"))
        let q = try pattern("{/:a}*{/:b}*{/:c}*/z")
        #expect(!q.matches(path: String(repeating: "/xy", count: 2000)))
    }
}

/// Random patterns of literals, `*`, `:name` and `{…}?` groups against random paths: the automaton
/// (with its literal-prefix refusal) agrees with the same pattern written as a regular expression.
@Suite struct URLPatternReferenceTests {
    @Test func agreesWithARegularExpressionOnRandomPatterns() throws {
        var rng = SplitMix64(seed: 0x5EED_1234)
        func next(_ bound: Int) -> Int { Int(rng.next() % UInt64(bound)) }
        let letters = ["a", "b", "/", "."]
        var disagreements: [String] = []
        for _ in 0..<400 {
            var source = "/", regex = "^/"
            var names = 0
            var modifiable = false  // a `*` right after a wildcard, a name or a group is a modifier
            for _ in 0..<(1 + next(5)) {
                switch next(6) {
                case 0 where !modifiable: source += "*"; regex += ".*"; modifiable = true
                case 1: names += 1; source += "/:n\(names)/"; regex += "/[^/]+/"; modifiable = false
                case 2: let l = letters[next(2)]; source += "{/\(l)}?"; regex += "(?:/\(l))?"; modifiable = false
                default: let l = letters[next(letters.count)]; source += l; regex += l == "." ? "\\." : l; modifiable = false
                }
            }
            regex += "$"
            guard let compiled = try? URLPattern(source, base: nil) else { continue }
            let reference = try NSRegularExpression(pattern: regex)
            for _ in 0..<20 {
                var path = "/"
                for _ in 0..<next(8) { path += letters[next(letters.count)] }
                let expected = reference.firstMatch(in: path, range: NSRange(path.startIndex..., in: path)) != nil
                if compiled.matches(path: path) != expected { disagreements.append("\(source) \(regex) \(path)") }
                if compiled.matches(path: path + "?q=/x") != expected { disagreements.append("\(source) \(path)?q=/x") }
                if compiled.matches(path: Substring("xx" + path).dropFirst(2)) != expected { disagreements.append("substring \(path)") }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(6))")
    }
}

@Suite struct URLPatternValidationTests {
    @Test(arguments: [
        ("/a/(\\d+)", URLPatternError.Kind.regexpGroup),
        ("/a/:id(\\d+)", .regexpGroup),
        ("/a/(.*)", .regexpGroup),
        ("https://other.example/static/*", .crossOrigin),
        ("http://example.com/static/*", .crossOrigin),
        ("https://example.com:8443/static/*", .crossOrigin),
        ("https://*.example.com/static/*", .unsupportedComponent),
        ("http{s}?://example.com/a", .unsupportedComponent),
        ("https://user:pw@example.com/a", .unsupportedComponent),
        ("//example.com/a", .unsupportedComponent),
        ("/a?v=*", .unsupportedComponent),
        ("/a#frag", .unsupportedComponent),
        ("?q", .unsupportedComponent),
        ("", .empty),
        ("/a\\", .danglingEscape),
        ("/a/:", .missingName),
        ("/a/:/b", .missingName),
        ("/:x/:x", .duplicateName),
        ("/a{b", .unbalancedGroup),
        ("/a}b", .unbalancedGroup),
        ("/a{{b}}", .unbalancedGroup),
        ("/a{:x:y}", .unbalancedGroup),
        ("/a+", .misplacedModifier),
        ("/a/:x??", .unsupportedComponent),
    ])
    func rejects(match: String, kind: URLPatternError.Kind) {
        #expect {
            try URLPattern(match, base: base)
        } throws: { error in
            guard let e = error as? URLPatternError else { return false }
            return e.kind == kind && e.pattern == match && !e.message.isEmpty
        }
    }

    /// Configured patterns: valid syntax that can never match what it says is refused too.
    @Test(arguments: ["/a/*?q=1", "/a/:id?x", "/a/*?\\?", "/caf\u{E9}/*", "/app.* ", " /a", "/a b", "/a\t", "/a\\\\b",
                      "/static\\app.*"])
    func servedPatternsThatNeverMatch(match: String) {
        #expect(throws: URLPatternError.self) { try URLPattern.validateServed(match) }
        if (try? URLPattern.validate(match)) != nil {
            #expect { try URLPattern.validateServed(match) } throws: { ($0 as? URLPatternError)?.kind == .neverMatches }
        }
    }

    @Test(arguments: ["/static/app.*", "/caf%C3%A9/*", "/a%20b", "/a/\\:x/*", "/a/\\?", "/files/:name?", "/files/:name?/x",
                      "/a/{:id}?", "/a/*", "/a/:x+/b"])
    func servedPatternsThatCanMatch(match: String) throws {
        try URLPattern.validateServed(match)
    }

    @Test func tooLongPatternsAreRejected() {
        #expect(throws: URLPatternError.self) { try URLPattern("/" + String(repeating: "a", count: 3000), base: base) }
    }

    @Test func configurationValidationWithoutABaseURL() throws {
        try URLPattern.validate("/static/app.*.js")
        #expect { try URLPattern.validate("app.*.js") } throws: { ($0 as? URLPatternError)?.kind == .needsBaseURL }
        #expect { try URLPattern.validate("https://example.com/a") } throws: { ($0 as? URLPatternError)?.kind == .needsBaseURL }
        #expect { try URLPattern.validate("/a/(x)") } throws: { ($0 as? URLPatternError)?.kind == .regexpGroup }
    }

    @Test func errorsNameThePatternAndTheProblem() {
        do {
            _ = try URLPattern("/a/(x)", base: nil)
            Issue.record("expected an error")
        } catch {
            #expect(error.description.contains("\"/a/(x)\""))
            #expect(error.description.contains("regexp"))
            #expect(error.offset == 3)
        }
    }
}

@Suite struct URLPatternProperties {
    /// Characters of a percent-encoded path, including every pattern metacharacter that may appear in
    /// one (`*`, `+`, `:`, `(`, `)`), but not `?`/`#` (they end a path).
    static let pathCharacters: [Character] = Array("abcxyzABZ0189-._~!$&'()*+,;=:@/%")

    @Test func anEscapedLiteralPathMatchesExactlyItself() async {
        let paths = Gen<Character?>.element(of: Self.pathCharacters).map { $0! }.string(of: 0...24).map { "/" + $0 }
        await propertyCheck(count: 300, input: paths, paths) { path, other in
            let p = try URLPattern(URLPattern.escapePatternString(path), base: nil)
            #expect(p.matches(path: path))
            #expect(p.matches(path: other) == (other == path))
            #expect(!p.matches(path: path + "a"))
            #expect(!p.matches(path: String(path.dropLast())) || path.isEmpty)
        }
    }
}

@Suite struct URLPatternBaseTests {
    @Test func parsesOrigins() throws {
        let local = try #require(URLPatternBase(url: "http://localhost:8080/static/app.js?v=1"))
        #expect(local.scheme == "http" && local.host == "localhost" && local.port == 8080 && local.path == "/static/app.js")
        let defaultPort = try #require(URLPatternBase(url: "HTTP://127.0.0.1:80"))
        #expect(defaultPort.port == nil && defaultPort.path == "/")
        let v6 = try #require(URLPatternBase(url: "https://[::1]:8443/d"))
        #expect(v6.host == "[::1]" && v6.port == 8443)
        #expect(URLPatternBase(url: "/relative") == nil)
        #expect(URLPatternBase(url: "https://user@host/") == nil)
        #expect(URLPatternBase(url: "https://host:99999/") == nil)
    }

    /// Found by the client-response fuzzer: "http://localhost:80p://…" was accepted as host
    /// "localhost:80p" with an empty port, an origin that printed as a URL that did not parse again.
    @Test func refusesAColonInAnUnbracketedHost() throws {
        #expect(URLPatternBase(url: "http://localhost:80p://localhost:8080/a/page.html") == nil)
        #expect(URLPatternBase(url: "http://a:b:/x") == nil)
        let emptyPort = try #require(URLPatternBase(url: "http://localhost:/x"))
        #expect(emptyPort.host == "localhost" && emptyPort.port == nil)
    }

    @Test func sameOriginAbsolutePatternsOnLocalhost() throws {
        let local = URLPatternBase(url: "http://localhost:8080/v1/app.js")!
        #expect(try URLPattern("http://localhost:8080/v*/app.js", base: local).matches(path: "/v2/app.js"))
        #expect { try URLPattern("http://localhost:8081/v*/app.js", base: local) } throws: { ($0 as? URLPatternError)?.kind == .crossOrigin }
        #expect { try URLPattern("http://127.0.0.1:8080/v*/app.js", base: local) } throws: { ($0 as? URLPatternError)?.kind == .crossOrigin }
    }
    /// A combining mark after a slash joins the slash's grapheme: prefix and directory checks must
    /// work on bytes/scalars, not `Character`s (the url-pattern fuzzer's crash of 2026-11-23:
    /// `https://example.com/\u{05BB}/e` resolved to a pathname that did not parse again).
    @Test func combiningMarkAfterASlashStaysAPath() throws {
        let base = URLPatternBase(url: "https://example.com/static/app.v1.js")!
        let resolved = try URLPattern("https://example.com/\u{05BB}/e", base: base)
        #expect(resolved.pathname == "/\u{05BB}/e")
        let again = try URLPattern(resolved.pathname, base: nil)
        #expect(again.pathname == resolved.pathname)
        #expect(try URLPattern("/\u{05BB}x/*", base: nil).matches(path: "/%D6%BBx/a"))
        let oddBase = try #require(URLPatternBase(url: "https://example.com/\u{05BB}"))
        #expect(try URLPattern("d*", base: oddBase).pathname == "/d*")
        #expect(URLPatternBase(url: "https://example.com:\u{05BB}80/") == nil)
    }

    /// A relative pattern just under the length limit grows by the base's directory when resolved; the
    /// resolved form must still parse (the store keeps it), so it is refused as too long.
    @Test func relativePatternTooLongOnceResolvedIsRefused() throws {
        let base = URLPatternBase(url: "https://example.com/static/app.v1.js")!
        let match = String(repeating: "a", count: URLPattern.maximumLength - 3) + "*"
        #expect(try URLPattern("/" + match, base: nil).pathname.count == URLPattern.maximumLength - 1)
        #expect { try URLPattern(match, base: base) } throws: { ($0 as? URLPatternError)?.kind == .tooLong }
    }
}
