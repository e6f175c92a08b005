import DictionaryCodec
import Testing

@Suite struct CompressedBodyInfoTests {
    static let input = TestBytes.text(70_000, seed: 31)

    @Test func plainCodings() throws {
        let zstd = try CompressedBodyInfo.inspect(try Zstd.encode(Self.input, level: 3))
        #expect(zstd.coding == .zstd && zstd.contentSize == 70_000 && zstd.hasChecksum == true && zstd.dictionaryHash == nil)
        let gzip = try CompressedBodyInfo.inspect(try Gzip.encode(Self.input, level: 6))
        #expect(gzip.coding == .gzip && gzip.contentSize == 70_000 && gzip.windowSize == 32 * 1024)
        let brBody = try Brotli.encode(Self.input, level: 5)
        let br = try CompressedBodyInfo.inspect(brBody, hint: .br)
        #expect(br.coding == .br && br.windowSize == (1 << 22) - 16 && br.contentSize == nil)
        #expect(throws: CodecError.self) { try CompressedBodyInfo.inspect(brBody) }
    }

    @Test func dictionaryCodings() throws {
        let dictionary = CompressionDictionary(bytes: TestBytes.text(10_000, seed: 32))
        let dcb = try CompressedBodyInfo.inspect(try DCB.encode(Self.input, dictionary: dictionary, level: 5))
        #expect(dcb.coding == .dcb && dcb.dictionaryHash == dictionary.hash && dcb.windowSize == (1 << 24) - 16)
        let dcz = try CompressedBodyInfo.inspect(try DCZ.encode(Self.input, dictionary: dictionary, level: 3))
        #expect(dcz.coding == .dcz && dcz.dictionaryHash == dictionary.hash && dcz.contentSize == 70_000)
        #expect(DictionaryFrameHeader.detect([0xFF, 0x44, 0x43, 0x42]) == .dcb)
        #expect(DictionaryFrameHeader.detect([0x5E, 0x2A, 0x4D, 0x18, 0x20, 0, 0, 0]) == .dcz)
        #expect(DictionaryFrameHeader.detect([0x28, 0xB5, 0x2F, 0xFD]) == nil)
        #expect(throws: CodecError.truncated) { try CompressedBodyInfo.inspect(DictionaryFrameHeader(coding: .dcz, hash: dictionary.hash).bytes) }
    }
}
