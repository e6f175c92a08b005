import DictionaryCodec
import DictionaryTransport
import HTTPTypes
import PropertyBased
import Testing

/// Hostile-input properties: every parser answers (a value or a typed rejection), never traps or hangs.
@Suite struct RobustnessPropertyTests {
    /// Characters that exercise the parsers' syntax: pattern metacharacters, sf delimiters, separators.
    static let hostile: [Character] = Array("/a:b*?+{}()\\#%.;=,\"' \t:AZ09éx-_")

    static let strings = Gen<Character?>.element(of: hostile).map { $0! }.string(of: 0...40)

    @Test func urlPatternsParseOrFailWithATypedError() async {
        let base = URLPatternBase(url: "https://example.com/dir/dict.js")!
        await propertyCheck(count: 1_000, input: Self.strings, Self.strings) { match, path in
            do {
                let pattern = try URLPattern(match, base: base)
                _ = pattern.matches(path: "/" + path)
                #expect(pattern.pathname.hasPrefix("/"))
            } catch let error as URLPatternError {
                #expect(!error.message.isEmpty)
            } catch {
                Issue.record("untyped error \(error)")
            }
        }
    }

    @Test func headerParsersNeverTrap() async {
        await propertyCheck(count: 1_000, input: Self.strings) { value in
            _ = AvailableDictionary.parse(fieldValue: value)
            _ = DictionaryID.parse(fieldValue: value)
            _ = try? UseAsDictionary(fieldValue: value)
            let accept = AcceptEncoding(fieldValue: value)
            for coding in ContentCoding.allCases { #expect((0...1000).contains(accept.weight(of: coding))) }
        }
    }

    @Test func acceptEncodingWeightsFollowTheirQValues() async {
        let q = Gen.int(in: 0...1000)
        await propertyCheck(count: 300, input: q, q) { a, b in
            func text(_ v: Int) -> String { v == 1000 ? "1" : "0." + String(String(v + 1000).dropFirst()) }
            let accept = AcceptEncoding(fieldValue: "br;q=\(text(a)), gzip;q=\(text(b))")
            #expect(accept.weight(of: .br) == a)
            #expect(accept.weight(of: .gzip) == b)
            let choice = CodingChoice.choose([.init(.br), .init(.gzip)], accept: accept)
            if a == 0 && b == 0 { #expect(choice == .notAcceptable) } else { #expect(choice == .coding(b > a ? .gzip : .br)) }
        }
    }

    /// Random insert/lookup sequences against a simple model: the cache never exceeds its budget,
    /// its byte and entry counts agree with what it returns, and a present entry has the best level
    /// inserted since it was last (re)inserted.
    @Test func variantCacheKeepsItsInvariants() async {
        let operations = Gen.int(in: 0...999).array(of: 1...200)
        await propertyCheck(count: 200, input: operations) { ops in
            let cache = VariantCache(budget: 1_000)
            for op in ops {
                let key = VariantKey(resource: DictionaryHash(bytes: [UInt8](repeating: UInt8(op % 13), count: 32))!, coding: .br)
                if op % 3 == 0 {
                    _ = cache.bestEntry(for: key)
                } else {
                    let size = (op * 7) % 400 + 1
                    let level = op % 11
                    let before = cache.bestEntry(for: key)
                    let stored = cache.insert(CachedVariant(bytes: [UInt8](repeating: 0, count: size), level: level), for: key)
                    #expect(stored == (before == nil || level > before!.level))
                    if stored { #expect(cache.bestEntry(for: key)?.level == level) }
                }
                let stats = cache.stats
                #expect(stats.bytes <= 1_000)
                #expect(stats.bytes >= 0 && stats.entries >= 0)
            }
            var total = 0
            var count = 0
            for r in 0..<13 {
                let key = VariantKey(resource: DictionaryHash(bytes: [UInt8](repeating: UInt8(r), count: 32))!, coding: .br)
                if let v = cache.bestEntry(for: key) { total += v.bytes.count; count += 1 }
            }
            #expect(cache.stats.bytes == total)
            #expect(cache.stats.entries == count)
        }
    }
}
