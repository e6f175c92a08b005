@testable import DCServe
import DictionaryCodec
import HTTPTypes
import Testing

/// Upstream bodies are decoded with real codecs, within a size cap, and never under no-transform.
@Suite struct UpstreamBodyDecoderTests {
    static let identity = Array(String(repeating: "{\"id\":1,\"title\":\"a headline\"}\n", count: 200).utf8)

    @Test(arguments: [ContentCoding.gzip, .br, .zstd])
    func decodesEachCoding(coding: ContentCoding) throws {
        let encoded = try coding.encode(Self.identity, dictionary: nil, level: coding == .gzip ? 6 : 3)
        let outcome = UpstreamBodyDecoder.decode([.contentEncoding: coding.rawValue, .eTag: "\"v1-gz\"",
                                                  .contentType: "application/json"],
                                                 body: encoded, maxDecodedBytes: 1 << 20)
        guard case .decoded(let fields, let bytes) = outcome else { Issue.record("\(outcome)"); return }
        #expect(bytes == Self.identity)
        #expect(fields[.contentEncoding] == nil)
        #expect(fields[.eTag] == "\"v1-gz-identity\"")
        #expect(fields[.contentType] == "application/json")
    }

    @Test func capStopsADecompressionBomb() throws {
        let bomb = try ContentCoding.gzip.encode([UInt8](repeating: 0, count: 4 << 20), dictionary: nil, level: 6)
        let outcome = UpstreamBodyDecoder.decode([.contentEncoding: "gzip"], body: bomb, maxDecodedBytes: 1 << 20)
        guard case .failed(let reason, _, let tooLarge) = outcome, tooLarge else { Issue.record("\(outcome)"); return }
        #expect(reason.contains("gzip"))
    }

    @Test func corruptBodyFails() {
        let outcome = UpstreamBodyDecoder.decode([.contentEncoding: "br"], body: [1, 2, 3, 4, 5], maxDecodedBytes: 1 << 20)
        if case .failed = outcome {} else { Issue.record("\(outcome)") }
    }

    @Test(arguments: [
        [HTTPField(name: .contentEncoding, value: "gzip"), HTTPField(name: .cacheControl, value: "no-transform")],
        [HTTPField(name: .contentEncoding, value: "gzip, br")],
        [HTTPField(name: .contentEncoding, value: "deflate")],
        [HTTPField(name: .contentEncoding, value: "identity")],
        [],
    ])
    func leftUnchanged(fields: [HTTPField]) throws {
        let gz = try ContentCoding.gzip.encode(Self.identity, dictionary: nil, level: 6)
        #expect(UpstreamBodyDecoder.decode(HTTPFields(fields), body: gz, maxDecodedBytes: 1 << 20) == .unchanged)
    }

    @Test func weakETagStaysWeak() {
        #expect(UpstreamBodyDecoder.identityETag("W/\"a\"") == "W/\"a-identity\"")
    }
}
