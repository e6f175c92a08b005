import DictionaryCodec
import Testing

/// Streaming in odd chunk sizes gives the same decoded bytes as one-shot, for every coding.
@Suite struct StreamingTests {
    static let dictionaryBytes = TestBytes.text(200_000, seed: 7)
    static let dictionary = CompressionDictionary(bytes: dictionaryBytes)
    static let input = TestBytes.revision(of: dictionaryBytes, count: 300_000, seed: 8)

    @Test(arguments: [ContentCoding.dcb, .dcz, .br, .zstd, .gzip, .identity])
    func oddChunksEqualOneShot(coding: ContentCoding) throws {
        let level = coding.defaultLevel(.onTheFly)
        let oneShot = try coding.encode(Self.input, dictionary: Self.dictionary, level: level)
        for chunk in [1, 3, 17, 4097, 65_537] {
            let smallInput = chunk == 1 ? Array(Self.input.prefix(5000)) : Self.input
            let streamed = try streamEncode(coding, smallInput, dictionary: Self.dictionary, level: level, chunk: chunk)
            #expect(try coding.decode(streamed, dictionary: Self.dictionary) == smallInput, "encode chunk \(chunk)")
            let body = chunk == 1 ? try coding.encode(smallInput, dictionary: Self.dictionary, level: level) : oneShot
            #expect(
                try streamDecode(coding, body, dictionary: Self.dictionary, chunk: chunk) == smallInput,
                "decode chunk \(chunk)")
        }
        #expect(try coding.decode(oneShot, dictionary: Self.dictionary) == Self.input)
    }

    @Test(arguments: [ContentCoding.dcb, .dcz, .br, .zstd, .gzip])
    func flushMakesEverythingSoFarDecodable(coding: ContentCoding) throws {
        let encoder = try coding.makeEncoder(dictionary: Self.dictionary, level: coding.defaultLevel(.onTheFly))
        let decoder = try coding.makeDecoder(dictionary: Self.dictionary)
        let first = Array(Self.input.prefix(10_000))
        var body = try encoder.update(first)
        body += try encoder.flush()
        #expect(try decoder.update(body) == first)
        let rest = try encoder.update(Self.input[10_000...]) + (try encoder.finish())
        var decoded = try decoder.update(rest)
        decoded += try decoder.finish()
        #expect(decoded == Array(Self.input[10_000...]))
        #expect(throws: CodecError.self) { try encoder.update([1, 2, 3]) }
    }

    @Test func emptyInputsRoundTrip() throws {
        for coding in [ContentCoding.dcb, .dcz, .br, .zstd, .gzip] {
            let body = try coding.encode([], dictionary: Self.dictionary, level: coding.defaultLevel(.onTheFly))
            #expect(try coding.decode(body, dictionary: Self.dictionary) == [], "\(coding)")
            let streamed = try streamEncode(coding, [], dictionary: Self.dictionary, level: 5, chunk: 10)
            #expect(try coding.decode(streamed, dictionary: Self.dictionary) == [], "\(coding)")
        }
    }
}
