import DictionaryCodec
import PortableZstd
import Testing

/// Every dcz the codec path (libzstd through DictionaryCodec) produces decodes with PureDCZ to the
/// same bytes libzstd decodes.
@Suite struct DCZCodecPathTests {
    static let dictionary = TestContent.json(1 << 20, seed: 11)
    static let prepared = CompressionDictionary(bytes: dictionary)

    static var limits: ZstdDecodeLimits {
        ZstdDecodeLimits(maxOutputBytes: 1 << 26, maxWindowBytes: PureDCZ.windowLimit(dictionary.count))
    }

    @Test(arguments: [1, 3, 9, 19])
    func levels(_ level: Int) throws {
        for size in [0, 1, 100, 5_000, 70_000, 1 << 20, 3 << 20] {
            let target = TestContent.edited(
                Array((Self.dictionary + TestContent.json(3 << 20, seed: 12)).prefix(size)), edits: size / 2_000, seed: 13)
            let body = try DCZ.encode(target, dictionary: Self.prepared, level: level)
            let libzstd = try DCZ.decode(body, dictionary: Self.prepared, maxOutput: 1 << 26)
            let swift = try PureDCZ.decode(body, dictionary: Self.dictionary, dictionaryHash: Self.prepared.hash.bytes,
                                           limits: Self.limits)
            #expect(swift == libzstd, "level \(level) size \(size)")
            #expect(swift == target)
        }
    }

    /// Dictionaries of 4 MiB or more are referenced as a prefix with long-distance matching, and a
    /// content within the RFC 9842 window makes a single-segment frame reaching the whole dictionary.
    @Test func largeDictionaryAsPrefix() throws {
        let dictionary = TestContent.noise(6 << 20, seed: 15)
        let prepared = CompressionDictionary(bytes: dictionary)
        let target = TestContent.edited(dictionary, edits: 200, seed: 16)
        let body = try DCZ.encode(target, dictionary: prepared, level: 3)
        #expect(body.count < 200_000)
        let limits = ZstdDecodeLimits(maxOutputBytes: 1 << 26, maxWindowBytes: PureDCZ.windowLimit(dictionary.count))
        let swift = try PureDCZ.decode(body, dictionary: dictionary, dictionaryHash: prepared.hash.bytes, limits: limits)
        #expect(swift == target)
        #expect(swift == (try DCZ.decode(body, dictionary: prepared, maxOutput: 1 << 26)))
    }

    @Test func smallDictionaries() throws {
        for size in [1, 27, 1_000, 40_000] {
            let dictionary = TestContent.json(size, seed: UInt64(size))
            let prepared = CompressionDictionary(bytes: dictionary)
            let target = TestContent.edited(dictionary + dictionary, edits: 3, seed: 14)
            let body = try DCZ.encode(target, dictionary: prepared, level: 3)
            #expect(try PureDCZ.decode(body, dictionary: dictionary, dictionaryHash: prepared.hash.bytes,
                                       limits: ZstdDecodeLimits(maxOutputBytes: 1 << 20, maxWindowBytes: 8 << 20)) == target)
        }
    }

    @Test func headerIsChecked() throws {
        let body = try DCZ.encode(Array("hello hello hello".utf8), dictionary: Self.prepared, level: 3)
        let hash = Self.prepared.hash.bytes
        let limits = ZstdDecodeLimits(maxOutputBytes: 100, maxWindowBytes: 8 << 20)
        var otherHash = hash
        otherHash[31] ^= 1
        #expect(throws: ZstdDecodeError.dictionaryHashMismatch) {
            try PureDCZ.decode(body, dictionary: Self.dictionary, dictionaryHash: otherHash, limits: limits)
        }
        var wrongMagic = body
        wrongMagic[0] = 0xFF
        #expect(throws: ZstdDecodeError.badDCZMagic) {
            try PureDCZ.decode(wrongMagic, dictionary: Self.dictionary, dictionaryHash: hash, limits: limits)
        }
        #expect(throws: ZstdDecodeError.truncated) {
            try PureDCZ.decode(Array(body.prefix(40)), dictionary: Self.dictionary, dictionaryHash: hash, limits: limits)
        }
        #expect(throws: ZstdDecodeError.truncated) {
            try PureDCZ.decode(Array(body.prefix(20)), dictionary: Self.dictionary, dictionaryHash: hash, limits: limits)
        }
        // The wrong dictionary with the right hash decodes to other bytes or fails; never traps.
        _ = try? PureDCZ.decode(body, dictionary: Array(Self.dictionary.reversed()), dictionaryHash: hash, limits: limits)
    }

    @Test func windowLimitFollowsRFC9842() {
        #expect(PureDCZ.windowLimit(0) == 8 << 20)
        #expect(PureDCZ.windowLimit(1 << 20) == 8 << 20)
        #expect(PureDCZ.windowLimit(16 << 20) == 20 << 20)
        #expect(PureDCZ.windowLimit(200 << 20) == 128 << 20)
    }
}
