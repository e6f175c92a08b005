import DictionaryCodec
import PropertyBased
import Testing

/// Randomized round trips over random dictionaries, inputs and levels (bounded counts, shrinking
/// seeds and sizes on failure).
@Suite struct RoundTripPropertyTests {
    static let codings: [ContentCoding] = [.dcb, .dcz, .br, .zstd, .gzip]

    /// A dictionary and an input related to it (a revision of it), both from `seed`.
    static func material(seed: UInt64, dictionarySize: Int, inputSize: Int, related: Bool)
        -> (CompressionDictionary, [UInt8])
    {
        let dictionaryBytes = seed % 3 == 0
            ? TestBytes.random(dictionarySize, seed: seed)
            : TestBytes.text(dictionarySize, seed: seed)
        let input = related
            ? TestBytes.revision(of: dictionaryBytes, count: inputSize, seed: seed &+ 1)
            : TestBytes.random(inputSize, seed: seed &+ 2)
        return (CompressionDictionary(bytes: dictionaryBytes), input)
    }

    @Test func oneShotRoundTrip() async {
        await propertyCheck(
            count: 60,
            input: Gen.uint64(), Gen.int(in: 0...4), Gen.int(in: 0...40_000), Gen.int(in: 0...60_000),
            Gen.int(in: 0...100), Gen.bool
        ) { seed, codingIndex, dictionarySize, inputSize, levelPercent, related in
            let coding = Self.codings[codingIndex]
            let range = coding.levelRange
            let top = coding == .dcz || coding == .zstd ? 19 : range.upperBound
            let bottom = coding == .dcz || coding == .zstd ? -5 : range.lowerBound
            let level = bottom + (top - bottom) * levelPercent / 100
            let (dictionary, input) = Self.material(
                seed: seed, dictionarySize: dictionarySize, inputSize: inputSize, related: related)
            let body = try coding.encode(input, dictionary: dictionary, level: level)
            let decoded = try coding.decode(
                body, dictionary: dictionary, limits: DecodeLimits(maxOutput: inputSize))
            #expect(decoded == input, "\(coding) level \(level) dict \(dictionarySize) input \(inputSize)")
            if coding.usesDictionary {
                #expect(try DictionaryFrameHeader.parse(body).hash == dictionary.hash)
            }
        }
    }

    @Test func streamingRoundTripInRandomChunks() async {
        await propertyCheck(
            count: 40,
            input: Gen.uint64(), Gen.int(in: 0...4), Gen.int(in: 1...30_000), Gen.int(in: 0...50_000),
            Gen.int(in: 1...5000)
        ) { seed, codingIndex, dictionarySize, inputSize, chunk in
            let coding = Self.codings[codingIndex]
            let (dictionary, input) = Self.material(
                seed: seed, dictionarySize: dictionarySize, inputSize: inputSize, related: true)
            let level = coding.defaultLevel(.onTheFly)
            let streamed = try streamEncode(coding, input, dictionary: dictionary, level: level, chunk: chunk)
            #expect(try coding.decode(streamed, dictionary: dictionary) == input)
            let oneShot = try coding.encode(input, dictionary: dictionary, level: level)
            #expect(try streamDecode(coding, oneShot, dictionary: dictionary, chunk: chunk) == input)
        }
    }
}
