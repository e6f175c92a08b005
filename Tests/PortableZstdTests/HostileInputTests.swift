import PortableZstd
import Testing
import TestSupport

/// Malformed and hostile input is refused with a typed error; nothing traps.
@Suite struct HostileInputTests {
    static let content = TestContent.json(200_000, seed: 21)
    static let limits = ZstdDecodeLimits(maxOutputBytes: 1 << 24, maxWindowBytes: 8 << 20)

    @Test func everyTruncationIsRefused() throws {
        let frame = try ZstdCLI.compress(Array(Self.content.prefix(20_000)), ["-19"])
        for length in 1..<frame.count {
            #expect(throws: ZstdDecodeError.self, "prefix \(length)") {
                try PureZstd.decompress(Array(frame.prefix(length)), limits: Self.limits)
            }
        }
    }

    @Test func bitFlipsAreRefusedOrHarmless() throws {
        let original = Array(Self.content.prefix(30_000))
        let frame = try ZstdCLI.compress(original, ["-9", "--check"])
        var rng = SplitMix64(seed: 22)
        for _ in 0..<3_000 {
            var damaged = frame
            let at = Int(rng.next() % UInt64(frame.count))
            damaged[at] ^= UInt8(1 << (rng.next() % 8))
            if let decoded = try? PureZstd.decompress(damaged, limits: Self.limits) {
                #expect(decoded == original, "flip at \(at) decoded to other bytes despite the checksum")
            }
        }
        for _ in 0..<3_000 {
            var damaged = frame
            let at = Int(rng.next() % UInt64(frame.count))
            damaged[at] = UInt8(truncatingIfNeeded: rng.next())
            _ = try? PureZstd.decompress(damaged, limits: Self.limits)
        }
    }

    @Test func noiseIsRefused() {
        for seed in 0..<200 as Range<UInt64> {
            var noise = TestContent.noise(Int(seed * 7 % 400), seed: seed)
            if seed % 2 == 0, noise.count > 8 { noise.replaceSubrange(0..<4, with: [0x28, 0xB5, 0x2F, 0xFD]) }
            _ = try? PureZstd.decompress(noise, limits: Self.limits)
        }
        #expect(throws: ZstdDecodeError.badMagic) { try PureZstd.decompress([1, 2, 3, 4, 5, 6], limits: Self.limits) }
        #expect(throws: ZstdDecodeError.truncated) { try PureZstd.decompress([0x28, 0xB5, 0x2F], limits: Self.limits) }
    }

    @Test func limitsAreTyped() throws {
        let zeros = [UInt8](repeating: 0, count: 2 << 20)
        let frame = try ZstdCLI.compress(zeros, ["-3"])
        #expect(throws: ZstdDecodeError.outputTooLarge(limit: 1 << 20)) {
            try PureZstd.decompress(frame, limits: ZstdDecodeLimits(maxOutputBytes: 1 << 20, maxWindowBytes: 8 << 20))
        }
        // Streamed (no content size): the output limit stops the decoder, too.
        let streamed = try ZstdCLI.compress(zeros, ["-3"], viaStdin: true)
        #expect(throws: ZstdDecodeError.outputTooLarge(limit: 1 << 20)) {
            try PureZstd.decompress(streamed, limits: ZstdDecodeLimits(maxOutputBytes: 1 << 20, maxWindowBytes: 8 << 20))
        }
        // A single-segment frame's window is its content size.
        #expect(throws: ZstdDecodeError.windowTooLarge(windowBytes: 2 << 20, limit: 1 << 20)) {
            try PureZstd.decompress(frame, limits: ZstdDecodeLimits(maxOutputBytes: 1 << 30, maxWindowBytes: 1 << 20))
        }
    }

    /// A few bytes declaring a terabyte of content: refused without allocating it up front.
    @Test func declaredContentSizeIsNotTrustedForAllocation() {
        let terabyte: UInt64 = 1 << 40
        var frame: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD, 0xE0]  // single segment, 8-byte content size
        for i in 0..<8 { frame.append(UInt8(truncatingIfNeeded: terabyte >> (8 * UInt64(i)))) }
        frame += [0x01, 0x00, 0x00]  // last block, raw, empty
        let limits = ZstdDecodeLimits(maxOutputBytes: Int.max, maxWindowBytes: Int.max)
        #expect(throws: ZstdDecodeError.contentSizeMismatch(declared: terabyte, decoded: 0)) {
            try PureZstd.decompress(frame, limits: limits)
        }
        #expect(throws: ZstdDecodeError.contentSizeMismatch(declared: terabyte, decoded: 0)) {
            try PureZstd.decompress(frame + frame, limits: limits)
        }
    }

    @Test func headerFieldsAreChecked() throws {
        let frame = try ZstdCLI.compress(Array(Self.content.prefix(1_000)), ["-3", "--check"])
        var reserved = frame
        reserved[4] |= 0x08
        #expect(throws: ZstdDecodeError.reservedBit) { try PureZstd.decompress(reserved, limits: Self.limits) }
        var checksum = frame
        checksum[checksum.count - 1] ^= 0x40
        #expect(throws: ZstdDecodeError.checksumMismatch) { try PureZstd.decompress(checksum, limits: Self.limits) }
        // A frame naming dictionary ID 7 (FHD dictionary-ID field of 1 byte inserted after the header).
        let descriptor = frame[4]
        #expect(descriptor & 0x03 == 0)
        let idAt = 5 + (descriptor & 0x20 != 0 ? 0 : 1)
        let withID = Array(frame[0..<4]) + [descriptor | 0x01] + Array(frame[5..<idAt]) + [7] + Array(frame[idAt...])
        #expect(throws: ZstdDecodeError.dictionaryIDMismatch(frameDictionaryID: 7)) {
            try PureZstd.decompress(withID, limits: Self.limits)
        }
        // The declared content size must match what the blocks decode to.
        let rawFrame: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD, 0x20, 5, 0x19, 0, 0, 1, 2, 3]  // FCS 5, raw block of 3
        #expect(throws: ZstdDecodeError.contentSizeMismatch(declared: 5, decoded: 3)) {
            try PureZstd.decompress(rawFrame, limits: Self.limits)
        }
        let rawFrameOK: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD, 0x20, 3, 0x19, 0, 0, 1, 2, 3]
        #expect(try PureZstd.decompress(rawFrameOK, limits: Self.limits) == [1, 2, 3])
    }

    @Test func offsetsBeyondTheDictionaryAreRefused() throws {
        let dictionary = TestContent.json(50_000, seed: 23)
        let target = TestContent.edited(dictionary, edits: 10, seed: 24)
        let frame = try ZstdCLI.compress(target, ["-3"], dictionary: dictionary)
        #expect(try PureZstd.decompress(frame, dictionary: dictionary, limits: Self.limits) == target)
        #expect(throws: ZstdDecodeError.self) {
            try PureZstd.decompress(frame, dictionary: Array(dictionary.suffix(1_000)), limits: Self.limits)
        }
        #expect(throws: ZstdDecodeError.self) { try PureZstd.decompress(frame, limits: Self.limits) }
    }
}
