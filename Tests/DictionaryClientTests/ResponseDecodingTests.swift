import DictionaryClient
import DictionaryClientSystemCodecs
import DictionaryCodec
import Foundation
import HTTPTypes
import Testing
import TestSupport

@Suite struct ResponseDecodingTests {
    let clock = TestClock()
    let dictionaryBytes = bytes("This is a test dictionary.\n")
    let payload = bytes("This is compressed test data using a test dictionary")

    func hexBytes(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = s.startIndex
        while i < s.endIndex {
            let j = s.index(i, offsetBy: 2)
            out.append(UInt8(s[i..<j], radix: 16)!)
            i = j
        }
        return out
    }
    let hashHex = "53969bcf5e960e0edbf0a4bdde6b0b3e9381e156de7f5b91ce8391624270f416"

    /// A client holding the reference dictionary, and a request naming it.
    func prepared() throws -> (DictionaryClient, PreparedDictionaryRequest) {
        let client = try memoryClient(clock)
        try register(client, url: "https://example.com/dict", body: dictionaryBytes, useAsDictionary: #"match="/data/*""#)
        let request = try client.prepare(url: "https://example.com/data/1")
        #expect(request.dictionary?.hash.hex == hashHex)
        return (client, request)
    }

    func process(_ client: DictionaryClient, _ request: PreparedDictionaryRequest, coding: String, body: [UInt8]) throws -> ProcessedResponse {
        try client.process(ClientResponse(status: 200, fields: fields(("content-encoding", coding)), body: body), for: request)
    }

    @Test func referenceVectorsDecode() throws {
        let (client, request) = try prepared()
        let dcb = hexBytes("ff444342" + hashHex + "a198018062a44c1ddf12848caec2ca6022076e810514c9b7c3448ebc16e0150eecc1ee34333e0d")
        let dcz = hexBytes("5e2a4d1820000000" + hashHex + "28b52ffd2434f5000098636f6d70726573736564617461207573696e67030059f97354462726109e99f2bc")
        let a = try process(client, request, coding: "dcb", body: dcb)
        #expect(a.body == payload)
        #expect(a.decodedWith?.hex == hashHex)
        #expect(a.wireByteCount == 75)
        #expect(try process(client, request, coding: "dcz", body: dcz).body == payload)
    }

    @Test func largerBodiesRoundTripThroughOurEncoders() throws {
        let client = try memoryClient(clock)
        let v1 = sampleText(1, count: 200_000), v2 = sampleText(2, count: 210_000)
        try register(client, url: "https://example.com/app.v1.js", body: v1, useAsDictionary: #"match="/app.*.js""#)
        let request = try client.prepare(url: "https://example.com/app.v2.js")
        let dictionary = try #require(request.dictionary)
        for coding in [ContentCoding.dcb, .dcz] {
            let body = try coding.encode(v2, dictionary: dictionary, level: 5)
            let r = try process(client, request, coding: coding.rawValue, body: body)
            #expect(r.body == v2)
            #expect(r.wireByteCount < v2.count / 10)
        }
    }

    @Test func wrongHashInTheHeaderIsRefusedBeforeDecoding() throws {
        let (client, request) = try prepared()
        let other = CompressionDictionary(bytes: bytes("another dictionary"))
        for coding in [ContentCoding.dcb, .dcz] {
            let body = try coding.encode(payload, dictionary: other, level: 5)
            #expect(throws: DictionaryClientError.dictionaryHashMismatch(coding: coding, advertised: request.dictionary!.hash, found: other.hash)) {
                try process(client, request, coding: coding.rawValue, body: body)
            }
        }
    }

    @Test func truncatedHeaderIsATypedError() throws {
        let (client, request) = try prepared()
        let dcz = try ContentCoding.dcz.encode(payload, dictionary: request.dictionary!, level: 3)
        let dcb = try ContentCoding.dcb.encode(payload, dictionary: request.dictionary!, level: 5)
        for cut in [0, 3, 20, 39] {
            #expect(throws: DictionaryClientError.truncatedDictionaryHeader(.dcz)) { try process(client, request, coding: "dcz", body: Array(dcz.prefix(cut))) }
        }
        for cut in [0, 2, 35] {
            #expect(throws: DictionaryClientError.truncatedDictionaryHeader(.dcb)) { try process(client, request, coding: "dcb", body: Array(dcb.prefix(cut))) }
        }
    }

    @Test func wrongMagicIsATypedError() throws {
        let (client, request) = try prepared()
        let dcb = try ContentCoding.dcb.encode(payload, dictionary: request.dictionary!, level: 5)
        #expect(throws: DictionaryClientError.wrongMagic(.dcz)) { try process(client, request, coding: "dcz", body: dcb + [UInt8](repeating: 0, count: 8)) }
    }

    @Test func corruptOrTruncatedBodyIsADecodeFailure() throws {
        let (client, request) = try prepared()
        for coding in [ContentCoding.dcb, .dcz] {
            var body = try coding.encode(sampleText(3, count: 20_000), dictionary: request.dictionary!, level: 5)
            let truncated = Array(body.prefix(body.count - 5))
            body[body.count / 2] ^= 0xFF
            body[body.count / 2 + 1] ^= 0x5A
            for bad in [body, truncated] {
                do {
                    let r = try process(client, request, coding: coding.rawValue, body: bad)
                    Issue.record("\(coding) corrupt body decoded to \(r.body.count) bytes")
                } catch {
                    guard case .decodeFailed(let c, _)? = error as? DictionaryClientError else { Issue.record("\(error)"); continue }
                    #expect(c == coding)
                }
            }
        }
    }

    @Test func dczWindowBeyondTheLimitIsRefused() throws {
        let (client, request) = try prepared()
        // A zstd frame declaring a 256 MiB window (Window_Descriptor exponent 18 → 2^28), one raw block.
        let frame: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x90, 0x09, 0x00, 0x00, 0x61]
        let body = hexBytes("5e2a4d1820000000" + hashHex) + frame
        #expect(throws: DictionaryClientError.decodeFailed(coding: .dcz, reason: .windowTooLarge(maxWindowLog: 23))) {
            try process(client, request, coding: "dcz", body: body)
        }
    }

    @Test func dcbLargeWindowStreamIsRefused() throws {
        let (client, request) = try prepared()
        // Large-window brotli (first byte 0x11, the WBITS escape) would need more than the 16 MiB dcb allows.
        let body = hexBytes("ff444342" + hashHex) + [0x11, 0x3E, 0x00, 0x00]
        #expect(throws: DictionaryClientError.decodeFailed(coding: .dcb, reason: .windowTooLarge(maxWindowLog: 24))) {
            try process(client, request, coding: "dcb", body: body)
        }
    }

    @Test func dictionaryCodingWithoutAnAdvertisedDictionaryIsRefused() throws {
        let client = try memoryClient(clock)
        let request = try client.prepare(url: "https://example.com/data/1")
        let body = try ContentCoding.dcz.encode(payload, dictionary: CompressionDictionary(bytes: dictionaryBytes), level: 3)
        #expect(throws: DictionaryClientError.dictionaryCodingWithoutDictionary(.dcz)) { try process(client, request, coding: "dcz", body: body) }
    }

    @Test func unknownCodingIsRefused() throws {
        let (client, request) = try prepared()
        #expect(throws: DictionaryClientError.unsupportedContentCoding("compress")) { try process(client, request, coding: "compress", body: payload) }
    }

    @Test func plainCodingsDecode() throws {
        let client = try memoryClient(clock)
        let request = try client.prepare(url: "https://example.com/x")
        let text = sampleText(9, count: 50_000)
        for (name, body) in [("gzip", try Gzip.encode(text, level: 6)), ("br", try Brotli.encode(text, level: 5)),
                             ("zstd", try Zstd.encode(text, level: 3)), ("identity", text)] {
            let r = try process(client, request, coding: name, body: body)
            #expect(r.body == text, "\(name)")
        }
        let r = try client.process(ClientResponse(status: 200, fields: HTTPFields(), body: text), for: request)
        #expect(r.body == text)
        // Two codings are undone in reverse order.
        let layered = try Gzip.encode(try Zstd.encode(text, level: 3), level: 1)
        #expect(try process(client, request, coding: "zstd, gzip", body: layered).body == text)
    }

    /// Codings are split at comma bytes, each field line on its own: `,\u{0301}` is one Character.
    @Test func codingsSplitAtCommaBytes() {
        #expect(ResponseBodyDecoder.codings([.contentEncoding: "gzip,\u{0301}br"]) == ["gzip", "\u{0301}br"])
        #expect(ResponseBodyDecoder.codings([.contentEncoding: "gzip", .contentEncoding: "\u{0301}br"]) == ["gzip", "\u{0301}br"])
        #expect(ResponseBodyDecoder.codings([.contentEncoding: " Zstd ,, identity, GZIP"]) == ["zstd", "gzip"])
    }

    @Test func decodedSizeLimitIsEnforced() throws {
        let store = try ClientDictionaryStore(location: .memory)
        let client = DictionaryClient(store: store, decoders: .systemLibraries, maxDecodedBytes: 1000, now: clock.function)
        let request = try client.prepare(url: "https://example.com/x")
        let body = try Zstd.encode([UInt8](repeating: 0, count: 100_000), level: 3)
        #expect(throws: DictionaryClientError.decodeFailed(coding: .zstd, reason: .outputLimitExceeded(limit: 1000))) {
            try process(client, request, coding: "zstd", body: body)
        }
    }
}
