import Foundation

/// The identity of a dictionary: SHA-256 over its (decoded) bytes, RFC 9842 §2.1.
///
/// A value type, `Hashable` and `Sendable`, cheap to copy (four machine words), usable as a cache key.
/// Forms: 64 lower-case hex digits (file names, logs) and the sf-binary `:base64:` used by
/// `Available-Dictionary`.
public struct DictionaryHash: Hashable, Sendable, Comparable, CustomStringConvertible {
    private let w0, w1, w2, w3: UInt64

    /// Builds a hash from exactly 32 bytes; returns nil for any other length.
    public init?<Bytes: Collection<UInt8>>(bytes: Bytes) {
        guard bytes.count == 32 else { return nil }
        self.init(validatedBytes: Array(bytes))
    }

    /// Exactly 32 bytes (a digest just computed); traps otherwise.
    package init(validatedBytes b: [UInt8]) {
        precondition(b.count == 32)
        func word(_ i: Int) -> UInt64 {
            var v: UInt64 = 0
            for k in 0..<8 { v = v << 8 | UInt64(b[i * 8 + k]) }
            return v
        }
        w0 = word(0); w1 = word(1); w2 = word(2); w3 = word(3)
    }

    /// Parses 64 hex digits (either case); nil otherwise.
    public init?(hex: some StringProtocol) {
        let utf8 = Array(hex.utf8)
        guard utf8.count == 64 else { return nil }
        var out = [UInt8](repeating: 0, count: 32)
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        for i in 0..<32 {
            guard let hi = nibble(utf8[2 * i]), let lo = nibble(utf8[2 * i + 1]) else { return nil }
            out[i] = hi << 4 | lo
        }
        self.init(validatedBytes: out)
    }

    /// The 32 digest bytes, big-endian as SHA-256 defines them.
    public var bytes: [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(32)
        for w in [w0, w1, w2, w3] {
            for k in (0..<8).reversed() { out.append(UInt8(truncatingIfNeeded: w >> (UInt64(k) * 8))) }
        }
        return out
    }

    /// 64 lower-case hex digits.
    public var hex: String { hexPrefix(64) }

    /// The first `count` (0…64) lower-case hex digits, written straight from the digest's words.
    public func hexPrefix(_ count: Int) -> String { hex(digits: 0..<count) }

    /// The lower-case hex digits at `digits` (clamped to 0..<64); up to 15 of them make a string that
    /// needs no heap storage.
    public func hex(digits: Range<Int>) -> String {
        let range = digits.clamped(to: 0..<64)
        return String(unsafeUninitializedCapacity: range.count) { out in
            for (k, i) in range.enumerated() {
                let word = i < 16 ? w0 : i < 32 ? w1 : i < 48 ? w2 : w3
                let nibble = UInt8(truncatingIfNeeded: word >> UInt64(60 - (i & 15) * 4)) & 0x0f
                out[k] = nibble < 10 ? 0x30 + nibble : 0x57 + nibble
            }
            return range.count
        }
    }

    /// Standard base64 of the digest (44 characters with padding).
    public var base64: String { Data(bytes).base64EncodedString() }

    /// The sf-binary serialisation, e.g. `:U5abz16WDg7b8KS93msLPpOB4Vbef1uRzoORYkJw9BY=:`, which is the
    /// whole value of an `Available-Dictionary` field.
    public var structuredFieldBinary: String { ":" + base64 + ":" }

    public var description: String { hex }

    public static func < (a: DictionaryHash, b: DictionaryHash) -> Bool {
        (a.w0, a.w1, a.w2, a.w3) < (b.w0, b.w1, b.w2, b.w3)
    }
}
