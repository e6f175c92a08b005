import DictionaryCodec
import Foundation
import Testing
import TestSupport

/// The dcz window rule (SPEC §4) and that a big dictionary is really used across a big input.
@Suite struct DCZWindowTests {
    @Test func windowRule() {
        #expect(DCZ.windowLog(dictionarySize: 0) == 23)
        #expect(DCZ.windowLog(dictionarySize: 2 << 20) == 23)
        #expect(DCZ.windowLog(dictionarySize: 7 << 20) == 23)   // 1.25×7 MiB < 16 MiB
        #expect(DCZ.windowLog(dictionarySize: 8 << 20) == 23)   // Chromium: ceil(log2(8 MiB)) = 23
        #expect(DCZ.windowLog(dictionarySize: 14 << 20) == 24)  // floor(log2(17.5 MiB)) = 24
        #expect(DCZ.windowLog(dictionarySize: 100 << 20) == 26)  // floor(log2(125 MiB))
        #expect(DCZ.windowLog(dictionarySize: 120 << 20) == 27)
        #expect(DCZ.windowLog(dictionarySize: 1 << 30) == 27)
        for size in [1, 1000, 5 << 20, 9 << 20, 13 << 20, 30 << 20, 200 << 20] {
            let log = DCZ.windowLog(dictionarySize: size)
            let chromiumCap = max(23, Int(log2(Double(size)).rounded(.up)))
            #expect(log <= chromiumCap && log <= 27 && log >= 23, "size \(size)")
        }
    }

    /// A one-shot encode whose content fits RFC 9842's limit (max(8 MB, 1.25 × dictionary)) is a
    /// single-segment frame (its window is the content size): the encoder may search the next power of
    /// 2 and reach the whole dictionary. A 12 MB file against its previous version: 24, not 23.
    @Test func windowForAKnownContentSize() {
        #expect(DCZ.windowLog(dictionarySize: 12_000_000) == 23)                           // streamed: within 15 MB
        #expect(DCZ.windowLog(dictionarySize: 12_000_000, contentSize: 12_000_000) == 24)
        #expect(DCZ.windowLog(dictionarySize: 12_000_000, contentSize: 15_000_001) == 23)  // over the limit
        #expect(DCZ.windowLog(dictionarySize: 1 << 20, contentSize: 1 << 20) == 23)
        #expect(DCZ.windowLog(dictionarySize: 1 << 30, contentSize: 1 << 20) == 27)
    }

    /// A 12 MB resource with 200 small edits against its previous version: a few KB of dcz (it was
    /// 5.8 MB with an 8 MiB window), decoded by libzstd with the standard dcz window limit.
    @Test func twelveMegabytesWithTwoHundredEdits() throws {
        let v1 = TestBytes.random(12_000_000, seed: 15)
        var v2 = v1
        var rng = SplitMix64(seed: 99)
        for _ in 0..<200 {
            let i = Int(rng.next() % UInt64(v2.count - 16))
            for j in 0..<8 { v2[i + j] = UInt8(truncatingIfNeeded: rng.next()) }
        }
        let dictionary = CompressionDictionary(bytes: v1)
        let body = try DCZ.encode(v2, dictionary: dictionary, level: 3)
        #expect(body.count < 100_000, "\(body.count) bytes")
        let info = try CompressedBodyInfo.inspect(body)
        #expect((info.windowSize ?? .max) <= 15_000_000)
        #expect(try DCZ.decode(body, dictionary: dictionary, maxOutput: 20_000_000) == v2)
    }

    @Test func twentyMegabytesWithTwoMegabyteDictionary() throws {
        let dictionaryBytes = TestBytes.random(2 << 20, seed: 77)
        let dictionary = CompressionDictionary(bytes: dictionaryBytes)
        // 20 MiB: ten copies of the (incompressible) dictionary. Without the dictionary the first copy
        // costs 2 MiB; with it, everything is a match.
        var input: [UInt8] = []
        for _ in 0..<10 { input += dictionaryBytes }
        let body = try DCZ.encode(input, dictionary: dictionary, level: 3)
        let plain = try Zstd.encode(input, level: 3)
        #expect(plain.count > 2 << 20)
        #expect(body.count < 64 * 1024, "dcz body \(body.count) bytes: dictionary not referenced")
        let info = try CompressedBodyInfo.inspect(body)
        #expect(info.windowSize! <= UInt64(1) << 23, "window \(info.windowSize!)")
        #expect(info.contentSize == UInt64(input.count))
        #expect(info.hasChecksum == true)
        #expect(try DCZ.decode(body, dictionary: dictionary, maxOutput: input.count) == input)
        // Streaming path (no pledged size) keeps the same window and still uses the dictionary.
        let streamed = try streamEncode(.dcz, input, dictionary: dictionary, level: 3, chunk: 1 << 20)
        #expect(streamed.count < 64 * 1024)
        #expect(try CompressedBodyInfo.inspect(streamed).windowSize == UInt64(1) << 23)
        #expect(try DCZ.decode(streamed, dictionary: dictionary, maxOutput: input.count) == input)
    }

    @Test func plainZstdWindowIsCappedAtEightMegabytes() throws {
        // Level 22 asks for a 128 MiB window; with an unknown size (streaming) nothing shrinks it, so
        // only our cap keeps it at 8 MiB.
        let input = TestBytes.text(100_000, seed: 1)
        let body = try streamEncode(.zstd, input, dictionary: nil, level: 22, chunk: 10_000)
        #expect(try CompressedBodyInfo.inspect(body).windowSize == UInt64(1) << 23)
        #expect(try Zstd.decode(body) == input)
    }
}
