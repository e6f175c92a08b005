import DictionaryCodec
import PortableZstd
import Testing

/// Frames from the real `zstd` CLI decode byte for byte as libzstd (DictionaryCodec's decoder) does.
@Suite struct CLIFrameTests {
    static let content = TestContent.json(300_000, seed: 1) + TestContent.noise(20_000, seed: 2)
    static let generous = ZstdDecodeLimits(maxOutputBytes: 1 << 28, maxWindowBytes: 1 << 27)

    /// Decodes with libzstd (one frame, C path) for comparison.
    static func libzstd(_ frame: [UInt8]) throws -> [UInt8] {
        try ContentCoding.zstd.decode(frame, dictionary: nil, limits: DecodeLimits(maxOutput: 1 << 28, maxWindowLog: 27))
    }

    @Test(arguments: 1...19)
    func level(_ level: Int) throws {
        let frame = try ZstdCLI.compress(Self.content, ["-\(level)"])
        let decoded = try PureZstd.decompress(frame, limits: Self.generous)
        #expect(decoded == Self.content)
        #expect(decoded == (try Self.libzstd(frame)))
    }

    @Test(arguments: 20...22)
    func ultraLevel(_ level: Int) throws {
        let frame = try ZstdCLI.compress(Self.content, ["--ultra", "-\(level)"])
        #expect(try PureZstd.decompress(frame, limits: Self.generous) == Self.content)
        #expect(try PureZstd.decompress(frame, limits: Self.generous) == (try Self.libzstd(frame)))
    }

    @Test(arguments: ["--check", "--no-check"])
    func checksumFlag(_ flag: String) throws {
        let frame = try ZstdCLI.compress(Self.content, ["-3", flag])
        #expect((frame[4] & 0x04 != 0) == (flag == "--check"))
        #expect(try PureZstd.decompress(frame, limits: Self.generous) == Self.content)
    }

    /// `--long=27` from a stream: the header declares a 128 MiB window, and matches reach back
    /// further than 8 MiB.
    @Test func longWindowLog27() throws {
        let block = TestContent.noise(9 << 20, seed: 3)
        let input = block + TestContent.json(100_000, seed: 4) + block
        let frame = try ZstdCLI.compress(input, ["-1", "--long=27"], viaStdin: true)
        #expect(frame.count < input.count / 2 + 200_000)  // the second copy became long matches
        let limits = ZstdDecodeLimits(maxOutputBytes: 1 << 26, maxWindowBytes: 128 << 20)
        #expect(try PureZstd.decompress(frame, limits: limits) == input)
        #expect(throws: ZstdDecodeError.windowTooLarge(windowBytes: 128 << 20, limit: 8 << 20)) {
            try PureZstd.decompress(frame, limits: ZstdDecodeLimits(maxOutputBytes: 1 << 26, maxWindowBytes: 8 << 20))
        }
    }

    @Test(arguments: [1 << 10, 64 << 10, 1 << 20, 16 << 20])
    func rawContentDictionary(size: Int) throws {
        let dictionary = TestContent.json(size, seed: 5)
        let target = TestContent.edited(Array(dictionary.suffix(200_000)), edits: 50, seed: 6)
        for level in [1, 3, 19] {
            let frame = try ZstdCLI.compress(target, ["-\(level)"], dictionary: dictionary)
            let decoded = try PureZstd.decompress(frame, dictionary: dictionary, limits: Self.generous)
            #expect(decoded == target, "dictionary \(size) level \(level)")
            let compressionDictionary = CompressionDictionary(bytes: dictionary)
            let libzstd = try DCZ.decode(
                DictionaryFrameHeader.dczMagic + compressionDictionary.hash.bytes + frame,
                dictionary: compressionDictionary, maxOutput: 1 << 28)
            #expect(decoded == libzstd)
        }
    }

    @Test func emptyContentAndEmptyInput() throws {
        let frame = try ZstdCLI.compress([], ["-3"])
        #expect(frame.count > 0)
        #expect(try PureZstd.decompress(frame, limits: Self.generous) == [])
        // An empty input holds no frame and decodes to nothing, as ZSTD_decompress has it.
        #expect(try PureZstd.decompress([], limits: Self.generous) == [])
    }

    @Test func concatenatedFramesAndSkippableFrames() throws {
        let a = TestContent.json(70_000, seed: 7)
        let b = TestContent.noise(5_000, seed: 8)
        let frames = try ZstdCLI.compress(a, ["-5"]) + ZstdCLI.compress(b, ["-1", "--no-check"])
        #expect(try PureZstd.decompress(frames, limits: Self.generous) == a + b)
        let skippable: [UInt8] = [0x53, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 9, 9, 9]
        #expect(try PureZstd.decompress(skippable + frames + skippable, limits: Self.generous) == a + b)
    }
}
