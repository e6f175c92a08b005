@testable import DictionaryTransport
import TestSupport
import Testing

/// The byte-level media-type check answers exactly as the rules on Characters, on the quirks too
/// (leading `;`, members of spaces, `//`, case, parameters, non-ASCII values).
@Suite struct PrecompressedMediaTypeTests {
    static let pieces = ["image", "IMAGE", "Image", "audio", "video", "font", "application", "APPLICATION", "woff", "woff2",
                         "svg+xml", "SVG+XML", "png", "zip", "x-7z-compressed", "pdf", "/", "/", "/", ";", ";", " ", "\t",
                         "q=1", "é", "\u{212A}", "/\u{0301}", "x", "charset=utf-8"]

    @Test func bytesAnswerAsCharacters() {
        var rng = SplitMix64(seed: 0x5EED_0042)
        var precompressed = 0
        for _ in 0..<5_000 {
            let count = Int.random(in: 0...6, using: &rng)
            let value = (0..<count).map { _ in Self.pieces.randomElement(using: &rng)! }.joined()
            let expected = CompressionEligibility.isPrecompressedByCharacters(value)
            #expect(CompressionEligibility.isPrecompressed(contentType: value) == expected, "\(value.debugDescription)")
            if expected { precompressed += 1 }
        }
        #expect(precompressed > 25, "the generator reaches precompressed types")
    }

    @Test(arguments: ["image//png", "/image/png", ";image/png", " ;image/png", "image/", "/png", "//", "image/png/x",
                      ";;video/mp4 ; q=1", "font/\u{0301}woff", "\u{212A}"])
    func quirks(value: String) {
        #expect(CompressionEligibility.isPrecompressed(contentType: value)
                == CompressionEligibility.isPrecompressedByCharacters(value), "\(value.debugDescription)")
    }
}
