@testable import DCServe
import DictionaryCodec
import DictionaryTransport
import Foundation
import HTTPServer
import HTTPTypes
import Logging
import Testing
import TestSupport
import Locking

/// Counts what the compression middleware reports, as one line per call, per request.
final class RecordingObserver: CompressionObserver {
    private let lines = Locked<[String]>([])

    /// Everything reported since the last call.
    func take() -> [String] { lines.withLock { l in defer { l = [] }; return l } }

    func decided(_ decision: EncodingDecision, path: Substring) { add("decided \(decision) \(path)") }
    func variantCache(hit: Bool) { add("variantCache \(hit)") }
    func encoded(coding: ContentCoding, level: Int, duration: Duration) { add("encoded \(coding) \(level)") }
    func storedDictionary(_ hash: DictionaryHash, bytes: Int) { add("stored \(hash.hex.prefix(8)) \(bytes)") }
    func sizes(rule: String?, identity: Int, bestPlain: Int, sent: Int) { add("sizes \(identity) \(bestPlain) \(sent)") }
    func responded(_ r: ResponseRecord) { add("responded \(r.method) \(r.path) \(r.status) \(r.decision.fieldValue)") }
    private func add(_ line: String) { lines.withLock { $0.append(line) } }
}

/// The compression middleware over a real static site in a temporary directory, with a real store.
struct MemoFixture {
    let site: URL
    let middleware: DictionaryCompressionMiddleware
    let files: StaticFileHandler
    let observer = RecordingObserver()
    let store: DirectoryDictionaryStore

    static let v1 = Array((0..<400).map { "let value\($0) = compute(\($0), 'first edition');\n" }.joined().utf8)
    /// v1 with a line in 50 changed: a delta against v1 is clearly smaller than any plain coding (a
    /// delta that saves nothing is not sent).
    static let v2 = Array((0..<400).map { "let value\($0) = compute(\($0), '\($0 % 50 == 7 ? "second" : "first") edition');\n" }.joined().utf8)

    init(retention: DictionaryRetention = DictionaryRetention(), decisionHeader: Bool = false) throws {
        site = uniqueTemporaryURL("memo")
        try FileManager.default.createDirectory(at: site.appendingPathComponent("static"), withIntermediateDirectories: true)
        try Data(Self.v1).write(to: site.appendingPathComponent("static/app.v1.js"))
        try Data(Self.v2).write(to: site.appendingPathComponent("static/app.v2.js"))
        var settings = DCServeConfiguration.Compression()
        settings.bestLevels = settings.fastLevels  // no background re-encodes: every step is synchronous
        store = try DirectoryDictionaryStore(directory: site.appendingPathComponent("store").path, retention: retention)
        middleware = DictionaryCompressionMiddleware(
            rules: try DictionaryRuleSet(rules: [DictionaryRule(name: "bundle", match: "/static/app.*.js")], outOfBand: []),
            settings: settings, store: store, library: DictionaryLibrary(store: store),
            variants: VariantCache(budget: 64 << 20), resources: ResourceCache(budget: 64 << 20),
            background: BackgroundEncoder(maxConcurrent: 1), observer: observer, logger: Logger(label: "test"),
            decisionHeader: decisionHeader)
        files = try StaticFileHandler(root: site.path)
    }

    func get(_ path: String, _ fields: HTTPFields = [:], method: HTTPRequest.Method = .get) throws -> (HTTPResponse, [UInt8]) {
        let request = HTTPServerRequest(head: HTTPRequest(method: method, scheme: "http", authority: "localhost",
                                                          path: path, headerFields: fields))
        let response = try awaitedResponse { middleware.handle(request, next: files, respond: $0) }
        let body: [UInt8] = switch response.body {
        case .bytes(let b): b
        case .file(let f): try f.readAll()
        case .stream: []
        }
        return (response.head, body)
    }

    /// Fields of a head in order, for exact comparison.
    static func lines(_ head: HTTPResponse) -> [String] {
        ["\(head.status.code)"] + head.headerFields.map { "\($0.name): \($0.value)" }
    }

    static func available(_ bytes: [UInt8]) -> String { ":" + Data(SHA256.hash(bytes).bytes).base64EncodedString() + ":" }
}

@Suite struct ResponseMemoTests {
    /// A request computed with every cache warm (the memo emptied before it), then asked twice more:
    /// both answers come from the memo and must equal the computed one in head, body and everything
    /// reported.
    func expectMemoisedLikeComputed(_ f: MemoFixture, _ path: String, _ fields: HTTPFields, method: HTTPRequest.Method = .get,
                                    sourceLocation: SourceLocation = #_sourceLocation) throws {
        var computedHead = HTTPResponse(status: .internalServerError), computedBody: [UInt8] = []
        var computedEffects: [String] = []
        // The first requests encode variants; a dictionary response may report its sizes from the
        // background (then it is not remembered). Compute again until a computation is remembered.
        for _ in 0..<200 {
            f.middleware.memo.removeAll()
            Thread.sleep(forTimeInterval: 0.01)  // background reports of earlier requests land here
            _ = f.observer.take()
            (computedHead, computedBody) = try f.get(path, fields, method: method)
            computedEffects = f.observer.take()
            if f.middleware.memo.count == 1 { break }
        }
        #expect(f.middleware.memo.count == 1, "the warm computation is remembered", sourceLocation: sourceLocation)
        for _ in 0..<2 {
            let (head, body) = try f.get(path, fields, method: method)
            #expect(MemoFixture.lines(head) == MemoFixture.lines(computedHead), sourceLocation: sourceLocation)
            #expect(body == computedBody, sourceLocation: sourceLocation)
            #expect(f.observer.take() == computedEffects, sourceLocation: sourceLocation)
        }
    }

    /// Every response advertised with `Use-As-Dictionary` must be in the store: after retention
    /// removed a dictionary this process stored earlier, serving it again (computed or from the memo)
    /// stores it again, so a client that keeps it can still get deltas.
    @Test func dictionaryRemovedByRetentionIsStoredAgainWhenAdvertised() throws {
        let f = try MemoFixture(retention: DictionaryRetention(keepPastExpiry: 0))
        let hash = SHA256.hash(MemoFixture.v1)
        for _ in 0..<3 { _ = try f.get("/static/app.v1.js") }  // stored, then remembered by the memo
        #expect(f.store.metadata(hash) != nil)
        let removed = f.store.prune(now: Date().addingTimeInterval(10 * 365 * 86400))
        #expect(removed.map(\.hash) == [hash])
        #expect(f.store.metadata(hash) == nil)
        let (head, body) = try f.get("/static/app.v1.js")
        let servedV1 = body == MemoFixture.v1
        #expect(head.headerFields[.useAsDictionary] != nil && servedV1)
        #expect(f.store.metadata(hash) != nil, "advertised again, so stored again")
        let storedV1 = f.store.get(hash)?.bytes == MemoFixture.v1
        #expect(storedV1, "the store holds v1's bytes again")
    }

    @Test func memoHitsEqualTheFullComputation() throws {
        let f = try MemoFixture()
        _ = try f.get("/static/app.v1.js")  // stores v1 as a dictionary
        let dictionary: HTTPFields = [.acceptEncoding: "gzip, br, zstd, dcb, dcz",
                                      .availableDictionary: MemoFixture.available(MemoFixture.v1)]
        try expectMemoisedLikeComputed(f, "/static/app.v2.js", dictionary)
        let (head, body) = try f.get("/static/app.v2.js", dictionary)
        #expect(head.headerFields[.contentEncoding] == "dcz")
        #expect(try DCZ.decode(body, dictionary: CompressionDictionary(bytes: MemoFixture.v1), maxOutput: 1 << 20) == MemoFixture.v2)

        try expectMemoisedLikeComputed(f, "/static/app.v2.js", dictionary, method: .head)
        try expectMemoisedLikeComputed(f, "/static/app.v2.js", [.acceptEncoding: "br"])
        try expectMemoisedLikeComputed(f, "/static/app.v2.js", [:])  // identity-only client
        try expectMemoisedLikeComputed(f, "/static/app.v2.js?x=1", [.acceptEncoding: "gzip"])
        var crossOrigin = dictionary
        crossOrigin[.secFetchSite] = "cross-site"
        crossOrigin[.secFetchMode] = "cors"
        crossOrigin[.origin] = "https://elsewhere.example"
        try expectMemoisedLikeComputed(f, "/static/app.v2.js", crossOrigin)
        #expect(try f.get("/static/app.v2.js", crossOrigin).0.headerFields[.contentEncoding] != "dcz", "the gate refuses")
        var credentialed = dictionary
        credentialed[.authorization] = "Bearer secret"
        try expectMemoisedLikeComputed(f, "/static/app.v2.js", credentialed)
        #expect(try f.get("/static/app.v2.js", credentialed).0.headerFields[.contentEncoding] != "dcz")
    }

    @Test func differentNegotiationInputsNeverShareAnEntry() throws {
        let f = try MemoFixture()
        _ = try f.get("/static/app.v1.js")
        let available = MemoFixture.available(MemoFixture.v1)
        let cases: [(HTTPFields, String?)] = [
            ([.acceptEncoding: "dcz", .availableDictionary: available], "dcz"),
            ([.acceptEncoding: "dcb", .availableDictionary: available], "dcb"),
            ([.acceptEncoding: "dcz", .availableDictionary: available, .dictionaryID: "\"a\"", .secFetchDest: "script"], "dcz"),
            ([.acceptEncoding: "gzip"], "gzip"),
            ([.acceptEncoding: "dcz", .availableDictionary: MemoFixture.available([1, 2, 3])], nil),
        ]
        for _ in 0..<3 {
            for (fields, coding) in cases {
                #expect(try f.get("/static/app.v2.js", fields).0.headerFields[.contentEncoding] == coding, "\(fields)")
            }
        }
    }

    @Test func fileReplacedInPlaceIsNoticedOnTheNextRequest() throws {
        let f = try MemoFixture()
        _ = try f.get("/static/app.v1.js")
        let fields: HTTPFields = [.acceptEncoding: "dcz", .availableDictionary: MemoFixture.available(MemoFixture.v1)]
        for _ in 0..<3 { _ = try f.get("/static/app.v2.js", fields) }
        let (oldHead, _) = try f.get("/static/app.v2.js", fields)
        // Same size, new content, written in place. (File timestamps come from the kernel's coarse
        // clock: wait past its tick so the new mtime differs, as it does for any real deploy.)
        Thread.sleep(forTimeInterval: 0.05)
        var today = MemoFixture.v2
        today[10] = UInt8(ascii: "X")
        let handle = try FileHandle(forWritingTo: f.site.appendingPathComponent("static/app.v2.js"))
        try handle.write(contentsOf: Data(today))
        try handle.close()
        let (head, body) = try f.get("/static/app.v2.js", fields)
        #expect(head.headerFields[.eTag] != oldHead.headerFields[.eTag])
        #expect(try DCZ.decode(body, dictionary: CompressionDictionary(bytes: MemoFixture.v1), maxOutput: 1 << 20) == today)
        let (_, identity) = try f.get("/static/app.v2.js")
        #expect(identity == today)
    }

    @Test func conditionalRequestsAreEvaluatedOnEveryHit() throws {
        let f = try MemoFixture()
        _ = try f.get("/static/app.v1.js")
        let fields: HTTPFields = [.acceptEncoding: "dcz", .availableDictionary: MemoFixture.available(MemoFixture.v1)]
        for _ in 0..<3 { _ = try f.get("/static/app.v2.js", fields) }
        let etag = try #require(try f.get("/static/app.v2.js", fields).0.headerFields[.eTag])
        var conditional = fields
        conditional[.ifNoneMatch] = etag
        for _ in 0..<2 {
            let (head, body) = try f.get("/static/app.v2.js", conditional)
            #expect(head.status == .notModified && body.isEmpty && head.headerFields[.eTag] == etag)
        }
        conditional[.ifNoneMatch] = "\"something-else\""
        #expect(try f.get("/static/app.v2.js", conditional).0.status == .ok)
        // The identity ETag does not match the dcz variant.
        let identityTag = try #require(try f.get("/static/app.v2.js").0.headerFields[.eTag])
        conditional[.ifNoneMatch] = identityTag
        #expect(try f.get("/static/app.v2.js", conditional).0.status == .ok)
    }

    @Test func aBetterVariantReplacesTheRememberedOne() throws {
        let f = try MemoFixture()
        let fields: HTTPFields = [.acceptEncoding: "br"]
        for _ in 0..<3 { _ = try f.get("/static/app.v2.js", fields) }
        let (head, _) = try f.get("/static/app.v2.js", fields)
        #expect(head.headerFields[.eTag]?.hasSuffix("-br\"") == true)
        let better = try ContentCoding.br.encode(MemoFixture.v2, dictionary: nil, level: 11)
        f.middleware.variants.insert(CachedVariant(bytes: better, level: 11),
                                     for: VariantKey(resource: SHA256.hash(MemoFixture.v2), coding: .br))
        let (upgraded, body) = try f.get("/static/app.v2.js", fields)
        #expect(upgraded.headerFields[.eTag] == head.headerFields[.eTag])  // the same variant: the same tag
        #expect(body == better)
    }

    @Test func entriesAnswerOnlyForTheSameInnerResponseAndGenerations() throws {
        let memo = ResponseMemo(byteBudget: 1 << 20)
        let key = try #require(ResponseMemoKey(HTTPServerRequest(head: HTTPRequest(
            method: .get, scheme: "http", authority: "localhost", path: "/a.js", headerFields: [.acceptEncoding: "br"]))))
        let inner = HTTPServerResponse(status: .ok, headerFields: [.eTag: "\"v1\"", .contentType: "text/javascript"],
                                       body: .bytes(Array(repeating: 7, count: 300)))
        #expect(ResponseMemo.accepts(inner))
        let generations = ResponseMemo.Generations(variants: 4, library: 2)
        memo.insert(key, ResponseMemo.Entry(
            inner: .init(head: inner.head, bodyLength: 300), head: inner.head, body: .bytes([1, 2, 3]),
            effects: ResponseEffects(), variantsGeneration: 4, libraryGeneration: 2))
        #expect(memo.lookup(key, inner: inner, generations: generations) != nil)
        #expect(memo.lookup(key, inner: inner, generations: .init(variants: 5, library: 2)) == nil)
        #expect(memo.lookup(key, inner: inner, generations: .init(variants: 4, library: 3)) == nil)
        var changed = inner
        changed.head.headerFields[.eTag] = "\"v2\""
        #expect(memo.lookup(key, inner: changed, generations: generations) == nil)
        changed = inner
        changed.body = .bytes(Array(repeating: 7, count: 301))
        #expect(memo.lookup(key, inner: changed, generations: generations) == nil)
        changed = inner
        changed.head.headerFields.append(HTTPField(name: .contentType, value: "text/plain"))
        #expect(memo.lookup(key, inner: changed, generations: generations) == nil)
        // Not remembered at all: weak validators, no validator, other statuses.
        var weak = inner
        weak.head.headerFields[.eTag] = "W/\"v1\""
        #expect(!ResponseMemo.accepts(weak))
        var none = inner
        none.head.headerFields[.eTag] = nil
        #expect(!ResponseMemo.accepts(none))
        var notFound = inner
        notFound.head.status = .notFound
        #expect(!ResponseMemo.accepts(notFound))
    }

    @Test func keysRefuseRangesAndOtherMethodsAndKeepCredentialsOut() throws {
        func key(_ fields: HTTPFields, method: HTTPRequest.Method = .get) -> ResponseMemoKey? {
            ResponseMemoKey(HTTPServerRequest(head: HTTPRequest(method: method, scheme: "http", authority: "localhost",
                                                                path: "/a.js", headerFields: fields)))
        }
        #expect(key([:], method: .post) == nil)
        #expect(key([.range: "bytes=0-1"]) == nil)
        #expect(key([.acceptEncoding: String(repeating: "x", count: 5000)]) == nil)
        #expect(ResponseMemoKey(HTTPServerRequest(head: HTTPRequest(
            method: .get, scheme: "http", authority: "localhost", path: "/" + String(repeating: "a", count: 5000),
            headerFields: [:]))) == nil)
        let a = try #require(key([.cookie: "session=one"]))
        let b = try #require(key([.cookie: "session=two"]))
        #expect(a == b && !a.negotiationFields.contains("session"))
        #expect(key([.cookie: "x"]) != key([:]))
        #expect(key([:], method: .head) != key([:]))
        #expect(key([.secFetchSite: "cross-site"]) != key([:]))
        #expect(key([.acceptEncoding: "br", .acceptEncoding: "gzip"]) != key([.acceptEncoding: "br, gzip"]))
    }

    @Test func libraryGenerationChangesWithItsContentsOnly() throws {
        let f = try MemoFixture()
        let stored = try f.store.put(MemoFixture.v1, description: DictionaryDescription(
            pattern: try URLPattern("/static/app.*.js", base: nil), matchDestinations: [], id: nil, rule: "bundle",
            sourcePath: "/static/app.v1.js", maxAge: 60), now: Date())
        let library = f.middleware.library
        let g0 = library.generation
        #expect(library.lookup(stored) != nil)
        let g1 = library.generation
        #expect(g1 != g0, "a load changes it")
        #expect(library.lookup(stored) != nil)
        #expect(library.generation == g1, "a hit does not")
        library.forget(stored, partition: nil)
        #expect(library.generation != g1, "a forget does")
    }
}
