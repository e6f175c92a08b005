import DictionaryCodec
import Testing

/// SPEC.md §6: the web-platform-tests vectors decode to the payload, byte for byte.
@Suite struct ReferenceVectorTests {
    static let dictionary = CompressionDictionary(bytes: Array("This is a test dictionary.\n".utf8))
    static let payload = Array("This is compressed test data using a test dictionary".utf8)
    static let hashHex = "53969bcf5e960e0edbf0a4bdde6b0b3e9381e156de7f5b91ce8391624270f416"
    static let dcb = TestBytes.hex(
        "ff444342" + hashHex + "a198018062a44c1ddf12848caec2ca6022076e810514c9b7c3448ebc16e0150eecc1ee34333e0d")
    static let dcz = TestBytes.hex(
        "5e2a4d1820000000" + hashHex
            + "28b52ffd2434f5000098636f6d70726573736564617461207573696e67030059f97354462726109e99f2bc")

    @Test func vectorsHaveTheDocumentedLengths() {
        #expect(Self.dcb.count == 75)
        #expect(Self.dcz.count == 83)
        #expect(Self.dictionary.hash.hex == Self.hashHex)
    }

    @Test func dcbVectorDecodes() throws {
        #expect(try DCB.decode(Self.dcb, dictionary: Self.dictionary, maxOutput: 1000) == Self.payload)
    }

    @Test func dczVectorDecodes() throws {
        #expect(try DCZ.decode(Self.dcz, dictionary: Self.dictionary, maxOutput: 1000) == Self.payload)
    }

    @Test(arguments: [1, 2, 3, 7, 39, 41])
    func vectorsDecodeStreamed(chunk: Int) throws {
        #expect(try streamDecode(.dcb, Self.dcb, dictionary: Self.dictionary, chunk: chunk) == Self.payload)
        #expect(try streamDecode(.dcz, Self.dcz, dictionary: Self.dictionary, chunk: chunk) == Self.payload)
    }

    @Test func headersParse() throws {
        let dcb = try DictionaryFrameHeader.parse(Self.dcb)
        #expect(dcb.coding == .dcb && dcb.hash == Self.dictionary.hash && dcb.length == 36)
        let dcz = try DictionaryFrameHeader.parse(Self.dcz)
        #expect(dcz.coding == .dcz && dcz.hash == Self.dictionary.hash && dcz.length == 40)
        #expect(dcz.bytes == Array(Self.dcz.prefix(40)))
        #expect(dcb.bytes == Array(Self.dcb.prefix(36)))
        #expect(throws: CodecError.truncated) { try DictionaryFrameHeader.parse(Self.dcz.prefix(39)) }
        #expect(throws: CodecError.truncated) { try DictionaryFrameHeader.parse(Self.dcb.prefix(3)) }
        #expect(throws: CodecError.wrongMagic(expected: .dcz)) { try DictionaryFrameHeader.parse(Array("hello".utf8)) }
        #expect(throws: CodecError.wrongMagic(expected: .dcb)) {
            try DictionaryFrameHeader.parse(Self.dcz, expecting: .dcb)
        }
    }

    @Test func ourEncodersProduceTheExactHeaders() throws {
        let dcz = try DCZ.encode(Self.payload, dictionary: Self.dictionary, level: 3)
        #expect(Array(dcz.prefix(40)) == Array(Self.dcz.prefix(40)))
        let dcb = try DCB.encode(Self.payload, dictionary: Self.dictionary, level: 5)
        #expect(Array(dcb.prefix(36)) == Array(Self.dcb.prefix(36)))
        #expect(try DCZ.decode(dcz, dictionary: Self.dictionary, maxOutput: 100) == Self.payload)
        #expect(try DCB.decode(dcb, dictionary: Self.dictionary, maxOutput: 100) == Self.payload)
    }

    @Test func inspectReportsHeaderFields() throws {
        let info = try CompressedBodyInfo.inspect(Self.dcz)
        #expect(info.coding == .dcz && info.dictionaryHash == Self.dictionary.hash)
        #expect(info.contentSize == 52 && info.hasChecksum == true)
        let brInfo = try CompressedBodyInfo.inspect(Self.dcb)
        #expect(brInfo.coding == .dcb && brInfo.dictionaryHash == Self.dictionary.hash)
        #expect(brInfo.windowSize != nil)
    }
}
