@testable import DictionaryCodec
import Foundation
import Testing
import TestSupport

/// Small whole inputs at quality 10–11 are encoded without literal context modeling
/// (`BrotliEncoder.disablesLiteralContextModeling`): the rule, and that it makes short JSON deltas
/// smaller while every body still decodes.
@Suite struct BrotliSmallInputTests {
    @Test func ruleCoversOnlyKnownSmallInputsAtTheTopQualities() {
        #expect(BrotliEncoder.disablesLiteralContextModeling(quality: 11, inputSize: 200))
        #expect(BrotliEncoder.disablesLiteralContextModeling(quality: 10, inputSize: 12 << 10))
        #expect(!BrotliEncoder.disablesLiteralContextModeling(quality: 11, inputSize: (12 << 10) + 1))
        #expect(!BrotliEncoder.disablesLiteralContextModeling(quality: 9, inputSize: 200))
        #expect(!BrotliEncoder.disablesLiteralContextModeling(quality: 11, inputSize: nil))  // streamed
    }

    /// Chat-like JSON: a history of messages as the dictionary, the next few messages as the input.
    static func messages(_ range: Range<Int>) -> [UInt8] {
        let words = ["are", "we", "still", "on", "for", "the", "review", "tomorrow", "yes", "at", "ten", "bring",
                     "figures", "lunch", "usual", "place", "noon", "agenda", "sending", "it", "now", "great"]
        var json = #"{"messages":["#
        for n in range {
            var rng = SplitMix64(seed: UInt64(n))
            let text = (0..<(3 + Int(rng.next() % 9))).map { _ in words[Int(rng.next() % UInt64(words.count))] }
                .joined(separator: " ")
            let author = n % 2 == 0 ? #"{"id":"u-alice","name":"Alice Martin"}"# : #"{"id":"u-bob","name":"Bob Okafor"}"#
            json += #"{"id":\#(n),"author":\#(author),"sent_at":"2026-11-23T09:\#(10 + n % 50):\#(10 + (n * 7) % 50)Z","text":"\#(text)","reply_to":\#(n - 1)},"#
        }
        return Array((json.dropLast() + "]}").utf8)
    }

    @Test func smallDeltasAreSmallerWithoutLiteralContextModelingAndDecode() throws {
        let dictionary = CompressionDictionary(bytes: Self.messages(0..<8))
        var withModeling = 0, withRule = 0
        for start in stride(from: 8, to: 68, by: 3) {
            let input = Self.messages(start..<(start + 3))
            let forced = try BrotliEncoder(coding: .dcb, quality: 11, dictionary: dictionary, inputSize: input.count,
                                           literalContextModeling: true)
            withModeling += try input.withUnsafeBytes { try forced.compressWhole($0) }.count
            let body = try DCB.encode(input, dictionary: dictionary, level: 11)
            withRule += body.count
            #expect(try DCB.decode(body, dictionary: dictionary, maxOutput: input.count) == input)
            let plain = try Brotli.encode(input, level: 11)
            #expect(try Brotli.decode(plain) == input)
        }
        #expect(withRule < withModeling, "with the rule \(withRule) B, with literal context modeling \(withModeling) B")
    }
}
