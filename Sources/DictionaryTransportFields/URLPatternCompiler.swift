/// Tokenises and parses a pathname pattern (WHATWG URLPattern "parse a pattern string" with the
/// pathname options: prefix code point `/`, segment wildcard `[^/]+`) and compiles it to
/// ``Instruction``s. Internal; ``URLPattern`` is the public face.
enum URLPatternCompiler {
    enum Token: Equatable {
        case char(Unicode.Scalar)
        case escapedChar(Unicode.Scalar)
        case name(String)
        case asterisk
        case otherModifier(Unicode.Scalar)
        case open
        case close
        case end
    }

    enum Modifier { case none, optional, zeroOrMore, oneOrMore }

    enum Body { case segment, full }

    enum Part {
        case fixed([UInt8], Modifier)
        case wildcard(Body, prefix: [UInt8], suffix: [UInt8], Modifier)
    }

    static func compile(_ pathname: String, source: String) throws(URLPatternError) -> [Instruction] {
        let tokens = try tokenize(pathname, source: source)
        let parts = try parse(tokens, source: source)
        var builder = ProgramBuilder()
        for part in parts { builder.emit(part) }
        builder.append(.match)
        return builder.program
    }

    // MARK: Tokenizer

    static func tokenize(_ pattern: String, source: String) throws(URLPatternError) -> [(Token, Int)] {
        let s = Array(pattern.unicodeScalars)
        var out: [(Token, Int)] = []
        var i = 0
        while i < s.count {
            let c = s[i]
            switch c {
            case "*": out.append((.asterisk, i)); i += 1
            case "+", "?":
                // A `?` that cannot be a modifier starts the search component (constructor-string rule).
                if c == "?" {
                    let previous = out.last?.0
                    let modifiable: Bool
                    switch previous {
                    case .name?, .asterisk?, .close?: modifiable = true
                    default: modifiable = false
                    }
                    if !modifiable {
                        throw URLPatternError(.unsupportedComponent, pattern: source, offset: i,
                                              "`?` starts a search part, which is not supported (dcserve matches paths only); escape it as `\\?` to match a literal `?`")
                    }
                }
                out.append((.otherModifier(c), i)); i += 1
            case "\\":
                guard i + 1 < s.count else {
                    throw URLPatternError(.danglingEscape, pattern: source, offset: i, "`\\` at the end of the pattern escapes nothing")
                }
                out.append((.escapedChar(s[i + 1]), i)); i += 2
            case "{": out.append((.open, i)); i += 1
            case "}": out.append((.close, i)); i += 1
            case ":":
                var j = i + 1
                var name = ""
                while j < s.count, isIdentifier(s[j], first: j == i + 1) { name.unicodeScalars.append(s[j]); j += 1 }
                guard !name.isEmpty else {
                    throw URLPatternError(.missingName, pattern: source, offset: i, "`:` must be followed by a group name (escape it as `\\:` for a literal colon)")
                }
                out.append((.name(name), i)); i = j
            case "(":
                throw URLPatternError(.regexpGroup, pattern: source, offset: i,
                                      "regexp groups `( … )` are not allowed in a dictionary match (RFC 9842 §2.1.1); use `*` or `:name`")
            case "#":
                throw URLPatternError(.unsupportedComponent, pattern: source, offset: i,
                                      "`#` starts a hash part, which is not supported (dcserve matches paths only)")
            default: out.append((.char(c), i)); i += 1
            }
        }
        out.append((.end, s.count))
        return out
    }

    static func isIdentifier(_ c: Unicode.Scalar, first: Bool) -> Bool {
        if c == "$" || c == "_" { return true }
        if first { return c.properties.isIDStart }
        return c == "\u{200C}" || c == "\u{200D}" || c.properties.isIDContinue
    }

    // MARK: Parser

    static func parse(_ tokens: [(Token, Int)], source: String) throws(URLPatternError) -> [Part] {
        var index = 0
        var parts: [Part] = []
        var pending = ""
        var names = Set<String>()

        func peek() -> Token { tokens[index].0 }
        func offset() -> Int { tokens[index].1 }
        func consumeChar() -> Unicode.Scalar? {
            if case .char(let c) = peek() { index += 1; return c }
            return nil
        }
        func consumeEscaped() -> Unicode.Scalar? {
            if case .escapedChar(let c) = peek() { index += 1; return c }
            return nil
        }
        func consumeName() -> String? {
            if case .name(let n) = peek() { index += 1; return n }
            return nil
        }
        func consumeAsterisk() -> Bool {
            if peek() == .asterisk { index += 1; return true }
            return false
        }
        func consumeModifier() -> Modifier {
            switch peek() {
            case .otherModifier("?"): index += 1; return .optional
            case .otherModifier(_): index += 1; return .oneOrMore
            case .asterisk: index += 1; return .zeroOrMore
            default: return .none
            }
        }
        func consumeText() -> String {
            var text = ""
            while true {
                if let c = consumeChar() ?? consumeEscaped() { text.unicodeScalars.append(c) } else { return text }
            }
        }
        func flushPending() {
            if !pending.isEmpty { parts.append(.fixed(PathEncoding.encode(pending), .none)); pending = "" }
        }
        func addPart(prefix: String, name: String?, wildcard: Bool, suffix: String, modifier: Modifier) throws(URLPatternError) {
            if name == nil, !wildcard, modifier == .none { pending += prefix; return }
            flushPending()
            if name == nil, !wildcard {
                if !prefix.isEmpty { parts.append(.fixed(PathEncoding.encode(prefix), modifier)) }
                return
            }
            if let name {
                guard names.insert(name).inserted else {
                    throw URLPatternError(.duplicateName, pattern: source, "the group name `:\(name)` is used twice")
                }
            }
            parts.append(.wildcard(wildcard ? .full : .segment, prefix: PathEncoding.encode(prefix),
                                   suffix: PathEncoding.encode(suffix), modifier))
        }

        while index < tokens.count {
            let charToken = consumeChar()
            let name = consumeName()
            let wildcard = name == nil ? consumeAsterisk() : false
            if name != nil || wildcard {
                var prefix = charToken.map { String($0) } ?? ""
                if prefix != "/" { pending += prefix; prefix = "" }
                flushPending()
                let modifier = consumeModifier()
                try addPart(prefix: prefix, name: name, wildcard: wildcard, suffix: "", modifier: modifier)
                continue
            }
            if let fixed = charToken ?? consumeEscaped() { pending.unicodeScalars.append(fixed); continue }
            if peek() == .open {
                let openOffset = offset()
                index += 1
                let prefix = consumeText()
                let groupName = consumeName()
                let groupWildcard = groupName == nil ? consumeAsterisk() : false
                let suffix = consumeText()
                guard peek() == .close else {
                    switch peek() {
                    case .open: throw URLPatternError(.unbalancedGroup, pattern: source, offset: offset(), "groups `{…}` cannot nest")
                    case .end: throw URLPatternError(.unbalancedGroup, pattern: source, offset: openOffset, "`{` has no matching `}`")
                    case .otherModifier, .asterisk:
                        throw URLPatternError(.misplacedModifier, pattern: source, offset: offset(), "a modifier inside a group must follow the group: `{…}?`")
                    default:
                        throw URLPatternError(.unbalancedGroup, pattern: source, offset: offset(), "a group holds at most one `:name` or `*`")
                    }
                }
                index += 1
                let modifier = consumeModifier()
                try addPart(prefix: prefix, name: groupName, wildcard: groupWildcard, suffix: suffix, modifier: modifier)
                continue
            }
            flushPending()
            switch peek() {
            case .end: return parts
            case .close: throw URLPatternError(.unbalancedGroup, pattern: source, offset: offset(), "`}` has no matching `{`")
            default:
                throw URLPatternError(.misplacedModifier, pattern: source, offset: offset(),
                                      "a modifier (`?`, `+`, `*`) must follow `:name`, `*` or a group `{…}`")
            }
        }
        return parts
    }

    // MARK: Code generation

    struct ProgramBuilder {
        var program: [Instruction] = []

        @discardableResult
        mutating func append(_ i: Instruction) -> Int { program.append(i); return program.count - 1 }

        mutating func literal(_ bytes: [UInt8]) { for b in bytes { append(.byte(b)) } }

        mutating func body(_ body: Body) {
            switch body {
            case .segment:  // [^/]+
                let start = append(.notSlash)
                append(.split(start, program.count + 1))
            case .full:  // .*
                let loop = append(.split(program.count + 1, -1))
                append(.any)
                append(.jump(loop))
                program[loop] = .split(loop + 1, program.count)
            }
        }

        mutating func quantified(_ modifier: Modifier, _ emitX: (inout ProgramBuilder) -> Void) {
            switch modifier {
            case .none:
                emitX(&self)
            case .optional:
                let split = append(.split(-1, -1))
                emitX(&self)
                program[split] = .split(split + 1, program.count)
            case .zeroOrMore:
                let split = append(.split(-1, -1))
                emitX(&self)
                append(.jump(split))
                program[split] = .split(split + 1, program.count)
            case .oneOrMore:
                let start = program.count
                emitX(&self)
                append(.split(start, program.count + 1))
            }
        }

        mutating func emit(_ part: Part) {
            switch part {
            case .fixed(let bytes, let modifier):
                quantified(modifier) { $0.literal(bytes) }
            case .wildcard(let body, let prefix, let suffix, let modifier):
                if prefix.isEmpty && suffix.isEmpty {
                    quantified(modifier) { $0.body(body) }
                } else if modifier == .none || modifier == .optional {
                    quantified(modifier) { b in b.literal(prefix); b.body(body); b.literal(suffix) }
                } else {
                    // (?:P R (?:S P R)* S) with `?` around it for zero-or-more.
                    quantified(modifier == .zeroOrMore ? .optional : .none) { b in
                        b.literal(prefix); b.body(body)
                        b.quantified(.zeroOrMore) { c in c.literal(suffix); c.literal(prefix); c.body(body) }
                        b.literal(suffix)
                    }
                }
            }
        }
    }
}

/// Percent-encoding of fixed pattern text the way a URL path is canonicalised (WHATWG path
/// percent-encode set); existing `%XX` escapes are kept.
enum PathEncoding {
    static func encode(_ text: String) -> [UInt8] {
        var out: [UInt8] = []
        let hex = Array("0123456789ABCDEF".utf8)
        for b in text.utf8 {
            let needs = b <= 0x20 || b >= 0x7F || b == UInt8(ascii: "\"") || b == UInt8(ascii: "#") || b == UInt8(ascii: "<")
                || b == UInt8(ascii: ">") || b == UInt8(ascii: "?") || b == UInt8(ascii: "`") || b == UInt8(ascii: "{")
                || b == UInt8(ascii: "}")
            if needs {
                out.append(UInt8(ascii: "%")); out.append(hex[Int(b >> 4)]); out.append(hex[Int(b & 0xF)])
            } else {
                out.append(b)
            }
        }
        return out
    }
}

/// Runs a compiled program over a path's bytes (a Thompson NFA: linear in path × program length).
/// Its state — two thread lists, the per-step marks and the closure stack — is in one temporary
/// allocation (on the stack for ordinary patterns). Stateless; safe from any thread.
enum URLPatternMachine {
    static func run(_ program: [Instruction], on input: UnsafeBufferPointer<UInt8>) -> Bool {
        let n = program.count
        // Each pc is added at most once per step (marks); the stack gets at most two pushes per pc.
        return withUnsafeTemporaryAllocation(of: Int.self, capacity: 5 * n + 2) { memory in
            let base = memory.baseAddress!
            var current = base, next = base + n
            let mark = base + 2 * n, stack = base + 3 * n
            mark.initialize(repeating: -1, count: n)
            var currentCount = 0, nextCount = 0

            func add(_ pc: Int, to list: UnsafeMutablePointer<Int>, count: inout Int, generation: Int) {
                var depth = 0
                stack[depth] = pc; depth += 1
                while depth > 0 {
                    depth -= 1
                    let p = stack[depth]
                    if mark[p] == generation { continue }
                    mark[p] = generation
                    switch program[p] {
                    case .jump(let t): stack[depth] = t; depth += 1
                    case .split(let a, let b): stack[depth] = b; stack[depth + 1] = a; depth += 2
                    default: list[count] = p; count += 1
                    }
                }
            }

            add(0, to: current, count: &currentCount, generation: 0)
            for (step, byte) in input.enumerated() {
                nextCount = 0
                for k in 0..<currentCount {
                    let pc = current[k]
                    let advance: Bool
                    switch program[pc] {
                    case .byte(let b): advance = b == byte
                    case .notSlash: advance = byte != UInt8(ascii: "/")
                    case .any: advance = true
                    default: advance = false
                    }
                    if advance { add(pc + 1, to: next, count: &nextCount, generation: step + 1) }
                }
                swap(&current, &next)
                currentCount = nextCount
                if currentCount == 0 { return false }
            }
            for k in 0..<currentCount where program[current[k]] == .match { return true }
            return false
        }
    }
}
