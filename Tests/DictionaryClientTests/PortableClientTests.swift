import DictionaryClient
import DictionaryCodec
import Foundation
import HTTPTypes
import Testing
import TestSupport

/// The client as an app builds it: default decoders (pure-Swift dcz and zstd), what it offers, what
/// it decodes, and what each response's measurement says. Bodies come from libzstd (DictionaryCodec),
/// an independent encoder.
@Suite struct PortableClientTests {
    let clock = TestClock()
    let dictionaryBytes = bytes("This is a test dictionary.\n")
    let hashHex = "53969bcf5e960e0edbf0a4bdde6b0b3e9381e156de7f5b91ce8391624270f416"

    func portableClient(maxDecodedBytes: Int = 256 << 20) throws -> DictionaryClient {
        DictionaryClient(store: try ClientDictionaryStore(location: .memory), maxDecodedBytes: maxDecodedBytes, now: clock.function)
    }

    func process(_ client: DictionaryClient, _ request: PreparedDictionaryRequest, coding: String?, body: [UInt8]) throws -> ProcessedResponse {
        let f = coding.map { fields(("content-encoding", $0)) } ?? HTTPFields()
        return try client.process(ClientResponse(status: 200, fields: f, body: body), for: request)
    }

    @Test func offersExactlyWhatThePortableDecoderDecodes() throws {
        let client = try portableClient()
        #expect(client.decoders.codings == [.zstd, .dcz])
        #expect(try client.prepare(url: "https://example.com/a").fields[.acceptEncoding] == "zstd")
        try register(client, url: "https://example.com/d", body: dictionaryBytes, useAsDictionary: #"match="/data/*""#)
        let r = try client.prepare(url: "https://example.com/data/1")
        #expect(r.fields[.acceptEncoding] == "zstd, dcz")
        #expect(r.fields[.availableDictionary] != nil)
        // A caller's list keeps only decodable codings (and identity); no dcb without a brotli decoder.
        let given = try client.prepare(url: "https://example.com/data/1", fields: fields(("accept-encoding", "gzip, br;q=0.9, zstd, identity;q=0.1, *")))
        #expect(given.fields[.acceptEncoding] == "zstd, identity;q=0.1, dcz")
        let none = try client.prepare(url: "https://example.com/x", fields: fields(("accept-encoding", "gzip, br")))
        #expect(none.fields[.acceptEncoding] == "identity")
    }

    @Test func referenceVectorAndLibzstdFramesDecodeWithThePortableDecoder() throws {
        let client = try portableClient()
        try register(client, url: "https://example.com/d", body: dictionaryBytes, useAsDictionary: #"match="/data/*""#)
        let request = try client.prepare(url: "https://example.com/data/1")
        let dcz = hexBytes("5e2a4d1820000000" + hashHex + "28b52ffd2434f5000098636f6d70726573736564617461207573696e67030059f97354462726109e99f2bc")
        let r = try process(client, request, coding: "dcz", body: dcz)
        #expect(r.body == bytes("This is compressed test data using a test dictionary"))
        #expect(r.measurement.dictionary == .used(hash: DictionaryHash(hex: hashHex)!, id: nil))
        #expect(r.measurement.wireBytes == 83 && r.measurement.decodedBytes == 52)
        let text = sampleText(4, count: 300_000)
        for level in [1, 3, 19] {
            #expect(try process(client, request, coding: "dcz", body: ContentCoding.dcz.encode(text, dictionary: request.dictionary!, level: level)).body == text)
            #expect(try process(client, request, coding: "zstd", body: Zstd.encode(text, level: level)).body == text)
        }
    }

    @Test func portableDecoderErrorsAreTyped() throws {
        let client = try portableClient(maxDecodedBytes: 1000)
        try register(client, url: "https://example.com/d", body: dictionaryBytes, useAsDictionary: #"match="/data/*""#)
        let request = try client.prepare(url: "https://example.com/data/1")
        let frame: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x90, 0x09, 0x00, 0x00, 0x61]  // 256 MiB window
        #expect(throws: DictionaryClientError.decodeFailed(coding: .dcz, reason: .windowTooLarge(maxWindowLog: 23))) {
            try process(client, request, coding: "dcz", body: hexBytes("5e2a4d1820000000" + hashHex) + frame)
        }
        #expect(throws: DictionaryClientError.decodeFailed(coding: .zstd, reason: .outputLimitExceeded(limit: 1000))) {
            try process(client, request, coding: "zstd", body: Zstd.encode([UInt8](repeating: 7, count: 50_000), level: 3))
        }
        let good = try Zstd.encode(sampleText(5, count: 800), level: 3)
        #expect(throws: DictionaryClientError.decodeFailed(coding: .zstd, reason: .truncated)) {
            try process(client, request, coding: "zstd", body: Array(good.prefix(good.count - 3)))
        }
        #expect(throws: DictionaryClientError.unsupportedContentCoding("gzip")) {
            try process(client, request, coding: "gzip", body: Gzip.encode(bytes("x"), level: 6))
        }
        var corrupt = try ContentCoding.dcz.encode(sampleText(6, count: 900), dictionary: request.dictionary!, level: 3)
        corrupt[corrupt.count - 2] ^= 0xFF  // the checksum
        do {
            _ = try process(client, request, coding: "dcz", body: corrupt)
            Issue.record("a corrupt checksum decoded")
        } catch let error as DictionaryClientError {
            guard case .decodeFailed(.dcz, _) = error else { Issue.record("\(error)"); return }
        }
    }

    @Test func measurementSaysWhichDictionaryOrWhyNone() throws {
        let client = try portableClient()
        let plain = try client.prepare(url: "https://example.com/data/1")
        let noDictionary = try process(client, plain, coding: nil, body: bytes("hello"))
        #expect(noDictionary.measurement.dictionary == .notOffered(reason: plain.reason))
        #expect(noDictionary.measurement.contentCodings.isEmpty && noDictionary.measurement.decodeDuration == .zero)
        #expect(noDictionary.measurement.wireBytes == 5 && noDictionary.measurement.decodedBytes == 5)
        try register(client, url: "https://example.com/d", body: dictionaryBytes, useAsDictionary: #"match="/data/*", id="v1""#)
        let named = try client.prepare(url: "https://example.com/data/1")
        let text = sampleText(7, count: 20_000)
        let zstd = try Zstd.encode(text, level: 3)
        let declined = try process(client, named, coding: "zstd", body: zstd)
        #expect(declined.measurement.dictionary == .notUsedByServer(offered: DictionaryHash(hex: hashHex)!))
        #expect(declined.measurement.wireBytes == zstd.count && declined.measurement.decodedBytes == text.count)
        #expect(declined.measurement.contentCodings == ["zstd"])
        let dcz = try ContentCoding.dcz.encode(text, dictionary: named.dictionary!, level: 3)
        let used = try process(client, named, coding: "dcz", body: dcz)
        #expect(used.measurement.dictionary == .used(hash: DictionaryHash(hex: hashHex)!, id: "v1"))
        #expect(used.measurement.wireBytes == dcz.count && used.measurement.decodedBytes == text.count)
    }

    @Test func clearingAnAccountKeepsTheOthers() throws {
        let client = try portableClient()
        try register(client, url: "https://example.com/d", body: bytes("alice's"), useAsDictionary: #"match="/data/*""#, partition: "alice")
        try register(client, url: "https://example.com/d", body: bytes("bob's"), useAsDictionary: #"match="/data/*""#, partition: "bob")
        try client.clear(account: "alice")
        #expect(try client.prepare(url: "https://example.com/data/1", partition: "alice").dictionary == nil)
        #expect(try client.prepare(url: "https://example.com/data/1", partition: "bob").dictionary?.bytes == bytes("bob's"))
    }

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
}
