@testable import DictionaryCodec
import Testing

/// One-shot encodes return arrays without the compression bound's slack: a cached 200-byte delta of a
/// 50 KB body must not keep a 50 KB buffer (caches account the count; the allocator holds the capacity).
@Suite struct EncodeOutputSizeTests {
    static let base = TestBytes.text(52_000, seed: 7)
    static let next = TestBytes.revision(of: base, count: 52_000, seed: 8)

    static func expectTight(_ output: [UInt8], _ what: String) {
        #expect(output.capacity - output.count <= 4096, "\(what): \(output.count) bytes in a \(output.capacity)-byte buffer")
    }

    @Test func deltasAndPlainEncodesCarryNoSlack() throws {
        let dictionary = CompressionDictionary(bytes: Self.base)
        let dcz = try DCZ.encode(Self.next, dictionary: dictionary, level: 3)
        Self.expectTight(dcz, "dcz")
        #expect(try DCZ.decode(dcz, dictionary: dictionary, maxOutput: 1 << 20) == Self.next)
        let dcb = try DCB.encode(Self.next, dictionary: dictionary, level: 5)
        Self.expectTight(dcb, "dcb")
        #expect(try DCB.decode(dcb, dictionary: dictionary, maxOutput: 1 << 20) == Self.next)
        Self.expectTight(try Zstd.encode(Self.next, level: 3), "zstd")
        Self.expectTight(try Brotli.encode(Self.next, level: 5), "br")
        Self.expectTight(try Gzip.encode(Self.next, level: 6), "gzip")
    }

    @Test func inputsLargerThanTheScratchBuffersAreRightSized() throws {
        let large = TestBytes.text(EncodeOutputScratch.shared.bufferBytes + 100_000, seed: 9)
        let zstd = try Zstd.encode(large, level: 3)
        Self.expectTight(zstd, "zstd of a large input")
        #expect(try ContentCoding.zstd.decode(zstd, dictionary: nil, limits: DecodeLimits(maxOutput: 1 << 22)) == large)
        Self.expectTight(try Gzip.encode(large, level: 6), "gzip of a large input")
    }
}
