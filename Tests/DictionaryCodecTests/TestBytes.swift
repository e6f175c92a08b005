import DictionaryCodec
import TestSupport

/// Test data helpers: hex, deterministic pseudo-random bytes (SplitMix64), text-like content.
enum TestBytes {
    static func hex(_ s: String) -> [UInt8] {
        let digits = Array(s.utf8)
        func v(_ c: UInt8) -> UInt8 { c <= 57 ? c - 48 : (c | 0x20) - 87 }
        return stride(from: 0, to: digits.count, by: 2).map { v(digits[$0]) << 4 | v(digits[$0 + 1]) }
    }

    /// Incompressible bytes.
    static func random(_ count: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        var out = [UInt8](repeating: 0, count: count)
        var i = 0
        while i < count {
            var word = rng.next()
            for _ in 0..<8 where i < count {
                out[i] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                i += 1
            }
        }
        return out
    }

    /// Text-like bytes from a small vocabulary (compressible, but not trivially).
    static func text(_ count: Int, seed: UInt64) -> [UInt8] {
        let words = ["function", "return", "const", "let", "var", "if", "else", "for", "while", "import",
                     "export", "class", "this", "null", "true", "false", "0", "1", "42", "{", "}", "(", ")",
                     ";", "=", "=>", ".", ",", "\n", "  "].map { Array($0.utf8) }
        var rng = SplitMix64(seed: seed)
        var out: [UInt8] = []
        out.reserveCapacity(count + 16)
        while out.count < count {
            out += words[Int(rng.next() % UInt64(words.count))]
            out.append(0x20)
        }
        return Array(out.prefix(count))
    }

    /// A "new version" of `base`: copies of its pieces with small edits, plus fresh text.
    static func revision(of base: [UInt8], count: Int, seed: UInt64) -> [UInt8] {
        guard !base.isEmpty else { return text(count, seed: seed) }
        var rng = SplitMix64(seed: seed)
        var out: [UInt8] = []
        out.reserveCapacity(count + 4096)
        while out.count < count {
            switch rng.next() % 4 {
            case 0: out += text(Int(rng.next() % 64) + 1, seed: rng.next())
            default:
                let length = min(base.count, Int(rng.next() % 4096) + 1)
                let start = Int(rng.next() % UInt64(base.count - length + 1))
                out += base[start..<(start + length)]
            }
        }
        return Array(out.prefix(count))
    }
}

/// Decodes `body` with a fresh decoder fed in chunks of `chunk` bytes.
func streamDecode(
    _ coding: ContentCoding, _ body: [UInt8], dictionary: CompressionDictionary?, chunk: Int,
    limits: DecodeLimits = .default
) throws -> [UInt8] {
    let decoder = try coding.makeDecoder(dictionary: dictionary, limits: limits)
    var out: [UInt8] = []
    var i = 0
    while i < body.count {
        out += try decoder.update(body[i..<min(i + chunk, body.count)])
        i += chunk
    }
    out += try decoder.finish()
    return out
}

/// Encodes `input` with a fresh encoder fed in chunks of `chunk` bytes.
func streamEncode(
    _ coding: ContentCoding, _ input: [UInt8], dictionary: CompressionDictionary?, level: Int, chunk: Int
) throws -> [UInt8] {
    let encoder = try coding.makeEncoder(dictionary: dictionary, level: level)
    var out: [UInt8] = []
    var i = 0
    while i < input.count {
        out += try encoder.update(input[i..<min(i + chunk, input.count)])
        i += chunk
    }
    out += try encoder.finish()
    return out
}
