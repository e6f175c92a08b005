import DictionaryCodec
import Testing

@Suite struct SHA256Tests {
    @Test func referenceDictionaryHash() {
        let dictionary = Array("This is a test dictionary.\n".utf8)
        let hash = SHA256.hash(dictionary)
        #expect(hash.hex == "53969bcf5e960e0edbf0a4bdde6b0b3e9381e156de7f5b91ce8391624270f416")
        #expect(hash.structuredFieldBinary == ":U5abz16WDg7b8KS93msLPpOB4Vbef1uRzoORYkJw9BY=:")
    }

    @Test func emptyInputAndStreamingAgree() {
        #expect(SHA256.hash([UInt8]()).hex == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        let data = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let hasher = SHA256.Hasher()
        hasher.update(data[0..<777])
        hasher.update(data[777...])
        #expect(hasher.finalize() == SHA256.hash(data))
    }

    @Test func hexRoundTripAndRejects() {
        let hash = SHA256.hash(Array("x".utf8))
        #expect(DictionaryHash(hex: hash.hex) == hash)
        #expect(DictionaryHash(hex: hash.hex.uppercased()) == hash)
        #expect(DictionaryHash(hex: "abc") == nil)
        #expect(DictionaryHash(hex: String(repeating: "g", count: 64)) == nil)
        #expect(DictionaryHash(bytes: hash.bytes) == hash)
        #expect(DictionaryHash(bytes: [UInt8](repeating: 0, count: 31)) == nil)
    }

    @Test func linkedBrotliHasDictionaryAPI() {
        #expect(LibraryVersions.brotliSupportsDictionaries, "linked brotli \(LibraryVersions.brotli) < 1.1")
    }
}
