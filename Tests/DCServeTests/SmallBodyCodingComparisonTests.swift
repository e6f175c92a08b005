@testable import DCServe
import DictionaryCodec
import DictionaryTransport
import Foundation
import HTTPServer
import HTTPTypes
import Logging
import Synchronization
import Testing
import TestSupport

/// For a small body negotiated to a dictionary coding, the middleware
/// encodes dcb and dcz and sends the smaller; for one negotiated to brotli or zstd, the smaller of
/// those two (checked against independent encodes at the same levels); large bodies, unequal client
/// weights and a single offered coding keep one encode.
@Suite struct SmallBodyCodingComparisonTests {
    /// Chat-like English: brotli's built-in dictionary and shorter header make dcb the smaller here.
    static let dictionaryBytes = Array((0..<12).map {
        "{\"id\":\($0),\"author\":\"Alice Martin\",\"text\":\"Are we still on for the review on Thursday morning?\"}\n"
    }.joined().utf8)
    /// Above `compression.minimumBytes` (256), far below ``SmallBodyCodingComparison/maximumBodyBytes``.
    static let small = Array(["Yes, I will bring the quarterly figures and the minutes.", "Should we invite the council too?",
                              "Only if they read the report before Thursday.", "Fine, I will send it to them tonight."]
        .enumerated().map { "{\"id\":\(12 + $0.offset),\"author\":\"Bob Okafor\",\"text\":\"\($0.element)\"}\n" }.joined().utf8)
    static let large = Array((0..<400).map { "{\"id\":\($0),\"author\":\"Bob Okafor\",\"text\":\"line \($0 * 7) of the review\"}\n" }
        .joined().utf8)

    struct PathHandler: HTTPHandler {
        func handle(_ request: HTTPServerRequest, respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
            let path = request.pathWithoutQuery
            let body = path.hasSuffix("/dict") ? SmallBodyCodingComparisonTests.dictionaryBytes
                : path.hasSuffix("/large") ? SmallBodyCodingComparisonTests.large : SmallBodyCodingComparisonTests.small
            respond(HTTPServerResponse(status: .ok, headerFields: [.contentType: "application/json", .cacheControl: "max-age=60"],
                                       body: .bytes(body)))
        }
    }

    static let levels: [ContentCoding: Int] = [.dcz: 19, .dcb: 11, .zstd: 19, .br: 11, .gzip: 6]

    static func middleware(compare: Bool = true) throws -> (DictionaryCompressionMiddleware, String) {
        let dir = uniqueTemporaryURL("codingcmp").path
        var settings = DCServeConfiguration.Compression()
        settings.compareSmallBodies = compare
        settings.fastLevels = levels
        settings.bestLevels = levels  // no background re-encode changes a size during the test
        let store = try DirectoryDictionaryStore(directory: dir, retention: DictionaryRetention())
        let m = DictionaryCompressionMiddleware(
            rules: try DictionaryRuleSet(rules: [DictionaryRule(name: "chat", match: "/chat/*")], outOfBand: []),
            settings: settings, store: store, library: DictionaryLibrary(store: store),
            variants: VariantCache(budget: 64 << 20), resources: ResourceCache(budget: 64 << 20),
            background: BackgroundEncoder(maxConcurrent: 1), logger: Logger(label: "test"))
        return (m, dir)
    }

    static func get(_ m: DictionaryCompressionMiddleware, _ path: String, _ fields: HTTPFields) throws -> (HTTPResponse, [UInt8]) {
        let request = HTTPServerRequest(head: HTTPRequest(method: .get, scheme: "http", authority: "chat.example",
                                                          path: path, headerFields: fields))
        let response = try awaitedResponse { m.handle(request, next: PathHandler(), respond: $0) }
        guard case .bytes(let bytes) = response.body else { Issue.record("expected bytes"); return (response.head, []) }
        return (response.head, bytes)
    }

    static func offer(_ accept: String) -> HTTPFields {
        [.acceptEncoding: accept, .availableDictionary: SHA256.hash(dictionaryBytes).structuredFieldBinary]
    }

    @Test(arguments: ["dcz, dcb", "dcb, dcz", "gzip, deflate, br, zstd, dcb, dcz"])
    func smallBodyGetsTheSmallerDictionaryCoding(accept: String) throws {
        let (m, dir) = try Self.middleware()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(try Self.get(m, "/chat/dict", [:]).0.headerFields[.useAsDictionary] != nil)
        let dictionary = CompressionDictionary(bytes: Self.dictionaryBytes)
        let dcb = try DCB.encode(Self.small, dictionary: dictionary, level: 11)
        let dcz = try DCZ.encode(Self.small, dictionary: dictionary, level: 19)
        let (smaller, expected): (ContentCoding, [UInt8]) = dcb.count < dcz.count ? (.dcb, dcb) : (.dcz, dcz)
        for round in 0..<2 {  // the second time both variants are cached: negotiation decides alone
            let (head, body) = try Self.get(m, "/chat/1", Self.offer(accept))
            #expect(head.headerFields[.contentEncoding] == smaller.rawValue, "round \(round): dcb \(dcb.count) B, dcz \(dcz.count) B")
            #expect(body.count == expected.count)
            #expect(try smaller.decode(body, dictionary: dictionary) == Self.small)
        }
        #expect(smaller == .dcb, "this chat text is smaller as dcb (\(dcb.count) B) than as dcz (\(dcz.count) B)")
    }

    @Test(arguments: ["br, zstd", "zstd, br", "gzip, deflate, br, zstd"])
    func smallBodyGetsTheSmallerPlainCoding(accept: String) throws {
        let (m, dir) = try Self.middleware()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let br = try Brotli.encode(Self.small, level: 11)
        let zstd = try Zstd.encode(Self.small, level: 19)
        let (smaller, expected): (ContentCoding, [UInt8]) = br.count < zstd.count ? (.br, br) : (.zstd, zstd)
        for round in 0..<2 {  // the second time both variants are cached: negotiation decides alone
            let (head, body) = try Self.get(m, "/chat/1", [.acceptEncoding: accept])
            #expect(head.headerFields[.contentEncoding] == smaller.rawValue, "round \(round): br \(br.count) B, zstd \(zstd.count) B")
            #expect(body.count == expected.count)
            #expect(try smaller.decode(body, dictionary: nil) == Self.small)
        }
        #expect(smaller == .br, "this chat text is smaller as br (\(br.count) B) than as zstd (\(zstd.count) B), zstd being preferred")
        // A large body keeps the preferred coding and one encode.
        let (head, body) = try Self.get(m, "/chat/large", [.acceptEncoding: accept])
        #expect(head.headerFields[.contentEncoding] == "zstd", "server preference: zstd before br")
        #expect(try ContentCoding.zstd.decode(body, dictionary: nil) == Self.large)
        #expect(m.variants.bestEntry(resource: SHA256.hash(Self.large), dictionary: nil, coding: .br) == nil, "no second encode")
    }

    /// `compression.compareSmallBodies: false`: server preference alone, one encode per body.
    @Test func comparisonOffKeepsThePreferredCodingAndOneEncode() throws {
        let (m, dir) = try Self.middleware(compare: false)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (head, body) = try Self.get(m, "/chat/1", [.acceptEncoding: "gzip, deflate, br, zstd"])
        #expect(head.headerFields[.contentEncoding] == "zstd")
        #expect(try ContentCoding.zstd.decode(body, dictionary: nil) == Self.small)
        #expect(m.variants.bestEntry(resource: SHA256.hash(Self.small), dictionary: nil, coding: .br) == nil, "no second encode")
        _ = try Self.get(m, "/chat/dict", [:])
        let (delta, _) = try Self.get(m, "/chat/1", Self.offer("gzip, deflate, br, zstd, dcb, dcz"))
        #expect(delta.headerFields[.contentEncoding] == "dcz", "server preference: dcz first")
        #expect(m.variants.bestEntry(resource: SHA256.hash(Self.small), dictionary: SHA256.hash(Self.dictionaryBytes),
                                     coding: .dcb) == nil, "no second encode")
    }

    @Test func largeBodyOrUnequalWeightsKeepThePreferredCodingAndOneEncode() throws {
        let (m, dir) = try Self.middleware()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try Self.get(m, "/chat/dict", [:])
        let hash = SHA256.hash(Self.dictionaryBytes)
        #expect(Self.large.count > SmallBodyCodingComparison.maximumBodyBytes)
        #expect(Self.small.count > 256)
        let (head, body) = try Self.get(m, "/chat/large", Self.offer("dcb, dcz"))
        #expect(head.headerFields[.contentEncoding] == "dcz", "server preference: dcz first")
        #expect(try ContentCoding.dcz.decode(body, dictionary: CompressionDictionary(bytes: Self.dictionaryBytes)) == Self.large)
        #expect(m.variants.bestEntry(resource: SHA256.hash(Self.large), dictionary: hash, coding: .dcb) == nil, "no second encode")

        let (weighted, _) = try Self.get(m, "/chat/1", Self.offer("dcz, dcb;q=0.5"))
        #expect(weighted.headerFields[.contentEncoding] == "dcz", "the client's weight decides")
        #expect(m.variants.bestEntry(resource: SHA256.hash(Self.small), dictionary: hash, coding: .dcb) == nil)
    }

    @Test func rivalIsTheOtherDictionaryCodingOnlyWhenItCanWin() {
        let both: HTTPFields = [.acceptEncoding: "dcb, dcz"]
        let all: [ContentCoding] = [.dcz, .dcb, .br]
        #expect(SmallBodyCodingComparison.rival(of: .dcz, request: both, allowed: all, bodySize: 100, rivalSizeKnown: false) == .dcb)
        #expect(SmallBodyCodingComparison.rival(of: .dcb, request: both, allowed: all, bodySize: 100, rivalSizeKnown: false) == .dcz)
        #expect(SmallBodyCodingComparison.rival(of: .dcz, request: both, allowed: all, bodySize: 100, rivalSizeKnown: true) == nil)
        #expect(SmallBodyCodingComparison.rival(of: .dcz, request: both, allowed: [.dcz, .br], bodySize: 100, rivalSizeKnown: false) == nil)
        #expect(SmallBodyCodingComparison.rival(of: .dcz, request: [.acceptEncoding: "dcz"], allowed: all, bodySize: 100,
                                                 rivalSizeKnown: false) == nil)
        #expect(SmallBodyCodingComparison.rival(of: .dcz, request: [.acceptEncoding: "dcz, dcb;q=0.9"], allowed: all,
                                                 bodySize: 100, rivalSizeKnown: false) == nil)
        #expect(SmallBodyCodingComparison.rival(of: .dcz, request: both, allowed: all,
                                                 bodySize: SmallBodyCodingComparison.maximumBodyBytes + 1, rivalSizeKnown: false) == nil)
        #expect(SmallBodyCodingComparison.rival(of: .br, request: both, allowed: all, bodySize: 100, rivalSizeKnown: false) == nil)
        let plain: HTTPFields = [.acceptEncoding: "gzip, br, zstd"]
        #expect(SmallBodyCodingComparison.rival(of: .zstd, request: plain, allowed: [.zstd, .br], bodySize: 100, rivalSizeKnown: false) == .br)
        #expect(SmallBodyCodingComparison.rival(of: .br, request: plain, allowed: [.zstd, .br], bodySize: 100, rivalSizeKnown: false) == .zstd)
        #expect(SmallBodyCodingComparison.rival(of: .zstd, request: plain, allowed: [.zstd, .gzip], bodySize: 100, rivalSizeKnown: false) == nil)
        #expect(SmallBodyCodingComparison.rival(of: .gzip, request: plain, allowed: [.zstd, .br, .gzip], bodySize: 100,
                                                rivalSizeKnown: false) == nil)
    }
}
