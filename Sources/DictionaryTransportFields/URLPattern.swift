/// A validated RFC 9842 `match` pattern: the WHATWG URLPattern constructor-string subset dictionaries
/// use, reduced to its pathname and compiled to a small automaton.
///
/// Supported pathname syntax (WHATWG URLPattern semantics, pathname options, case-sensitive):
/// fixed text; `*` (any characters, `/` included); `:name` (one or more characters, no `/`);
/// `{ … }` groups (text, at most one `:name` or `*`, text); the modifiers `?` (optional), `+` (one or
/// more), `*` (zero or more) after `:name`, `*` or a group; `\` escapes the next character. A `/`
/// directly before `:name` or `*` is the part's prefix, so `/files/:name?` also matches `/files`.
/// Fixed text is percent-encoded like a URL path (`é` matches `%C3%A9`).
///
/// Refused with a typed ``URLPatternError``: regexp groups `( … )`; absolute patterns for another
/// scheme, host or port than the dictionary's (same-origin absolute patterns are accepted and reduced
/// to their path); pattern syntax in scheme/host/port; user info; search (`?…`) and hash (`#…`)
/// parts — dcserve matches paths only, which is safe because a client only announces a dictionary
/// whose full pattern matched. Relative patterns not starting with `/` are resolved against the
/// directory of the dictionary's URL (`app.*.js` from `/static/app.v1.js` → `/static/app.*.js`).
///
/// Matching runs a Thompson-NFA simulation over the bytes of the path: linear in path length ×
/// pattern size, no backtracking, no regex engine. A value type, immutable, thread-safe.
public struct URLPattern: Hashable, Sendable, CustomStringConvertible {
    /// The `match` string as given.
    public private(set) var source: String
    /// The resolved pathname pattern (after origin removal and relative resolution).
    public let pathname: String
    private let program: [Instruction]
    /// The bytes every match starts with (the program's leading literal steps): a path without them is
    /// refused before the automaton runs.
    private let literalPrefix: [UInt8]

    /// Longest pattern accepted, in Unicode scalars.
    public static let maximumLength = 2048

    /// Parses and validates `match` against the dictionary's URL.
    /// - Parameter base: the dictionary's URL. When nil (e.g. validating configuration before any URL
    ///   is known), only path patterns starting with `/` are accepted.
    public init(_ match: String, base: URLPatternBase?) throws(URLPatternError) {
        source = match
        pathname = try URLPattern.resolvePathname(match, base: base)
        program = try URLPatternCompiler.compile(pathname, source: match)
        literalPrefix = program.prefix { if case .byte = $0 { true } else { false } }.map { if case .byte(let b) = $0 { b } else { 0 } }
    }

    /// The same pattern reporting `source` as its original text (used when rebuilding a stored,
    /// already-resolved pattern).
    public func withSource(_ source: String) -> URLPattern {
        var copy = self
        copy.source = source
        return copy
    }

    /// Validates a pattern without keeping it (configuration checks at start-up).
    public static func validate(_ match: String, base: URLPatternBase? = nil) throws(URLPatternError) {
        _ = try URLPattern(match, base: base)
    }

    /// True when the percent-encoded request path matches the whole pathname pattern. Anything from
    /// the first `?` or `#` on is ignored (search and hash are not part of dcserve's match).
    /// Allocates nothing for a native string (the automaton's state lives on the stack).
    public func matches(path: some StringProtocol) -> Bool {
        let utf8 = path.utf8
        let bytes = utf8[..<(utf8.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? utf8.endIndex)]
        guard bytes.starts(with: literalPrefix) else { return false }
        return bytes.withContiguousStorageIfAvailable { URLPatternMachine.run(program, on: $0) }
            ?? Array(bytes).withUnsafeBufferPointer { URLPatternMachine.run(program, on: $0) }
    }

    public var description: String { pathname }

    public static func == (a: URLPattern, b: URLPattern) -> Bool { a.source == b.source && a.pathname == b.pathname }
    public func hash(into h: inout Hasher) { h.combine(source); h.combine(pathname) }

    // MARK: - Resolution
    //
    // Prefix checks compare UTF-8 bytes, never `Character`s: `"/\u{05BB}x".hasPrefix("/")` is false
    // (a combining mark joins the slash's grapheme), which made a resolved pathname fail to re-parse
    // (found by the url-pattern fuzzer).

    static func resolvePathname(_ match: String, base: URLPatternBase?) throws(URLPatternError) -> String {
        guard !match.isEmpty else { throw URLPatternError(.empty, pattern: match, "the pattern is empty") }
        guard match.unicodeScalars.count <= maximumLength else {
            throw URLPatternError(.tooLong, pattern: match, "the pattern is longer than \(maximumLength) characters")
        }
        if match.utf8.starts(with: "/".utf8) {
            if match.utf8.starts(with: "//".utf8) {
                throw URLPatternError(.unsupportedComponent, pattern: match,
                                      "scheme-relative patterns (`//host/…`) are not supported; use a path such as `/static/*`")
            }
            return match
        }
        if match.utf8.starts(with: "?".utf8) || match.utf8.starts(with: "#".utf8) {
            throw URLPatternError(.unsupportedComponent, pattern: match,
                                  "search and hash patterns are not supported; dcserve matches paths only")
        }
        if let parts = URLPatternBase.splitAbsolute(match) {
            guard let host = parts.host, parts.scheme.unicodeScalars.allSatisfy({ !"*:{}()+?\\".unicodeScalars.contains($0) }) else {
                throw URLPatternError(.unsupportedComponent, pattern: match,
                                      "patterns in the scheme, user info, host or port are not supported; use a same-origin path")
            }
            guard let base else {
                throw URLPatternError(.needsBaseURL, pattern: match,
                                      "an absolute pattern needs the dictionary's URL to check it is same-origin; use a path starting with `/`")
            }
            let given = URLPatternBase(scheme: parts.scheme, host: host, port: parts.port, path: "/")
            guard given.scheme == base.scheme, given.host == base.host, given.port == base.port else {
                throw URLPatternError(.crossOrigin, pattern: match,
                                      "the pattern's origin is not the dictionary's origin \(base.scheme)://\(base.host)\(base.port.map { ":\($0)" } ?? ""); clients ignore cross-origin patterns")
            }
            return try pathOnly(parts.rest.isEmpty ? "/" : parts.rest, match)
        }
        if match.contains("://") {
            throw URLPatternError(.unsupportedComponent, pattern: match,
                                  "patterns in the scheme, user info, host or port are not supported; use a same-origin path")
        }
        guard let base else {
            throw URLPatternError(.needsBaseURL, pattern: match,
                                  "a relative pattern needs the dictionary's URL; start the pattern with `/`")
        }
        let scalars = base.path.unicodeScalars  // `path` starts with a `/` byte (URLPatternBase.init)
        let directory = String(scalars[...scalars.lastIndex(of: "/")!])
        return try pathOnly(escapePatternString(directory) + match, match)
    }

    /// A resolved pathname must itself be a valid path pattern (the store keeps the resolved form and
    /// parses it again without a base): one starting with `//` would not be (found by fuzzing, #13).
    /// It must also fit `maximumLength` once resolved: a relative pattern just under the limit grows by
    /// the base's directory (found by fuzzing, #13).
    private static func pathOnly(_ pathname: String, _ match: String) throws(URLPatternError) -> String {
        guard !pathname.utf8.starts(with: "//".utf8) else {
            throw URLPatternError(.unsupportedComponent, pattern: match,
                                  "the pattern's path starts with `//`, which reads as a host; use a path such as `/static/*`")
        }
        guard pathname.unicodeScalars.count <= maximumLength else {
            throw URLPatternError(.tooLong, pattern: match,
                                  "resolved against the dictionary's URL, the pattern is longer than \(maximumLength) characters")
        }
        return pathname
    }

    /// Escapes pattern syntax so `text` is matched literally (WHATWG "escape a pattern string").
    public static func escapePatternString(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if "+*?:{}()\\".unicodeScalars.contains(scalar) { out.append("\\") }
            out.unicodeScalars.append(scalar)
        }
        return out
    }
}

/// One step of the compiled pathname automaton.
enum Instruction: Hashable, Sendable {
    case byte(UInt8)
    /// Any byte except `/`.
    case notSlash
    case any
    case split(Int, Int)
    case jump(Int)
    case match
}
