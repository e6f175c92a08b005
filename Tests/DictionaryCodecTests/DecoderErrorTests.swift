import DictionaryCodec
import Testing

/// Every decoder failure mode, fed real bad input, ends in the documented typed error.
@Suite struct DecoderErrorTests {
    static let dictionaryBytes = TestBytes.text(50_000, seed: 11)
    static let dictionary = CompressionDictionary(bytes: dictionaryBytes)
    static let otherDictionary = CompressionDictionary(bytes: TestBytes.text(50_000, seed: 12))
    static let input = TestBytes.revision(of: dictionaryBytes, count: 100_000, seed: 13)
    static let allCodings: [ContentCoding] = [.dcb, .dcz, .br, .zstd, .gzip]

    static func body(_ coding: ContentCoding) throws -> [UInt8] {
        try coding.encode(input, dictionary: dictionary, level: coding.defaultLevel(.onTheFly))
    }

    @Test func wrongMagic() throws {
        let dcb = try Self.body(.dcb)
        let dcz = try Self.body(.dcz)
        #expect(throws: CodecError.wrongMagic(expected: .dcz)) {
            try DCZ.decode(dcb, dictionary: Self.dictionary, maxOutput: 1 << 20)
        }
        #expect(throws: CodecError.wrongMagic(expected: .dcb)) {
            try DCB.decode(dcz, dictionary: Self.dictionary, maxOutput: 1 << 20)
        }
        // A plain zstd frame is not a dcz body; the check fires on the first differing byte.
        let zstd = try Self.body(.zstd)
        #expect(throws: CodecError.wrongMagic(expected: .dcz)) {
            try streamDecode(.dcz, zstd, dictionary: Self.dictionary, chunk: 1)
        }
    }

    @Test(arguments: [ContentCoding.dcb, .dcz])
    func dictionaryHashMismatch(coding: ContentCoding) throws {
        let body = try Self.body(coding)
        #expect(throws: CodecError.dictionaryHashMismatch(expected: Self.otherDictionary.hash, found: Self.dictionary.hash)) {
            try coding.decode(body, dictionary: Self.otherDictionary)
        }
        // Streamed: the error comes as soon as the header is complete, before any payload.
        let decoder = try coding.makeDecoder(dictionary: Self.otherDictionary)
        #expect(throws: CodecError.dictionaryHashMismatch(expected: Self.otherDictionary.hash, found: Self.dictionary.hash)) {
            _ = try decoder.update(body.prefix(DictionaryFrameHeader.length(of: coding)))
        }
    }

    @Test(arguments: [ContentCoding.dcb, .dcz])
    func dictionaryRequired(coding: ContentCoding) throws {
        #expect(throws: CodecError.dictionaryRequired(coding)) { try coding.makeDecoder(dictionary: nil) }
        #expect(throws: CodecError.dictionaryRequired(coding)) { try coding.makeEncoder(dictionary: nil, level: 5) }
    }

    @Test(arguments: allCodings)
    func truncated(coding: ContentCoding) throws {
        let body = try Self.body(coding)
        for cut in [1, 2, 5, body.count / 2, body.count - DictionaryFrameHeader.length(of: coding) - 1] {
            #expect(throws: CodecError.truncated, "\(coding) minus \(cut)") {
                try coding.decode(Array(body.dropLast(cut)), dictionary: Self.dictionary)
            }
        }
        #expect(throws: CodecError.truncated) { try coding.decode([], dictionary: Self.dictionary) }
        if coding.usesDictionary {
            let headerOnly = Array(body.prefix(DictionaryFrameHeader.length(of: coding)))
            #expect(throws: CodecError.truncated) { try coding.decode(headerOnly, dictionary: Self.dictionary) }
            #expect(throws: CodecError.truncated) {
                try coding.decode(Array(headerOnly.dropLast(3)), dictionary: Self.dictionary)
            }
        }
    }

    @Test(arguments: allCodings)
    func trailingData(coding: ContentCoding) throws {
        let body = try Self.body(coding)
        #expect(throws: CodecError.trailingData) { try coding.decode(body + [0], dictionary: Self.dictionary) }
        #expect(throws: CodecError.trailingData) { try coding.decode(body + body, dictionary: Self.dictionary) }
        // Trailing bytes in a later chunk are caught too.
        let decoder = try coding.makeDecoder(dictionary: Self.dictionary)
        _ = try decoder.update(body)
        #expect(throws: CodecError.trailingData) { try decoder.update([0x41]) }
    }

    @Test(arguments: allCodings)
    func outputLimitExceeded(coding: ContentCoding) throws {
        let body = try Self.body(coding)
        let limit = Self.input.count - 1
        #expect(throws: CodecError.outputLimitExceeded(limit: limit)) {
            try coding.decode(body, dictionary: Self.dictionary, limits: DecodeLimits(maxOutput: limit))
        }
        #expect(try coding.decode(body, dictionary: Self.dictionary, limits: DecodeLimits(maxOutput: Self.input.count)) == Self.input)
    }

    @Test func decompressionBombStopsEarly() throws {
        // 256 MiB of zeros compresses to a few KiB; a 1 MiB cap must stop it without decoding it all.
        let zeros = [UInt8](repeating: 0, count: 256 << 20)
        for coding in [ContentCoding.dcz, .zstd, .dcb, .br, .gzip] {
            let body = try coding.encode(zeros, dictionary: Self.dictionary, level: 1)
            #expect(body.count < 2 << 20)
            #expect(throws: CodecError.outputLimitExceeded(limit: 1 << 20), "\(coding)") {
                try coding.decode(body, dictionary: Self.dictionary, limits: DecodeLimits(maxOutput: 1 << 20))
            }
        }
    }

    @Test func windowTooLargeZstd() throws {
        // A 2 MiB input gives a frame window of ≥ 512 KiB (8 MiB for dcz); a 256 KiB limit refuses it.
        let big = TestBytes.random(2 << 20, seed: 3)
        for coding in [ContentCoding.dcz, .zstd] {
            let body = try coding.encode(big, dictionary: Self.dictionary, level: 1)
            #expect(throws: CodecError.windowTooLarge(maxWindowLog: 18), "\(coding)") {
                try coding.decode(body, dictionary: Self.dictionary, limits: DecodeLimits(maxOutput: 1 << 30, maxWindowLog: 18))
            }
        }
    }

    @Test func windowTooLargeBrotli() throws {
        // dcb/br streams declare lgwin 24 / 22; a limit of 16 refuses them.
        for coding in [ContentCoding.dcb, .br] {
            let body = try Self.body(coding)
            #expect(throws: CodecError.windowTooLarge(maxWindowLog: 16), "\(coding)") {
                try coding.decode(body, dictionary: Self.dictionary, limits: DecodeLimits(maxOutput: 1 << 30, maxWindowLog: 16))
            }
        }
        // A large-window stream (first byte 0x11: WBITS escape) is never accepted.
        let header = DictionaryFrameHeader(coding: .dcb, hash: Self.dictionary.hash).bytes
        #expect(throws: CodecError.windowTooLarge(maxWindowLog: 24)) {
            try DCB.decode(header + [0x11, 0x3e, 0x00, 0x00], dictionary: Self.dictionary, maxOutput: 100)
        }
        #expect(throws: CodecError.windowTooLarge(maxWindowLog: 24)) { try Brotli.decode([0x11, 0x3e, 0, 0]) }
    }

    @Test(arguments: allCodings)
    func corrupt(coding: ContentCoding) throws {
        var body = try Self.body(coding)
        let start = DictionaryFrameHeader.length(of: coding) + 12
        for i in stride(from: start, to: min(body.count, start + 64), by: 1) { body[i] ^= 0xA5 }
        #expect {
            try coding.decode(body, dictionary: Self.dictionary)
        } throws: { error in
            guard case .corrupt = error as? CodecError else { return false }
            return true
        }
    }

    @Test func checksumCatchesAFlippedByteInZstdPayload() throws {
        // A literal-only frame with a bad checksum must fail, not return wrong bytes.
        let text = TestBytes.random(1000, seed: 5)
        var body = try Zstd.encode(text, level: 3)
        body[body.count - 1] ^= 0xFF
        #expect(throws: CodecError.self) { try Zstd.decode(body) }
    }

    @Test func garbageNeverCrashes() throws {
        for seed in UInt64(0)..<200 {
            let garbage = TestBytes.random(Int(seed % 300), seed: seed)
            for coding in Self.allCodings {
                let prefix = coding.usesDictionary ? DictionaryFrameHeader(coding: coding, hash: Self.dictionary.hash).bytes : []
                #expect(throws: CodecError.self) { try coding.decode(prefix + garbage, dictionary: Self.dictionary) }
            }
        }
    }
}
