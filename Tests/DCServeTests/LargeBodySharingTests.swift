@testable import DCServe
import DictionaryCodec
import DictionaryTransport
import Dispatch
import Foundation
import HTTPServer
import HTTPTypes
import Logging
import Synchronization
import Testing
import TestSupport

/// A large file in a dictionary rule's scope costs no copy of its body per request:
/// identity is sent from the file, encoded variants from the variant cache's one shared array, and
/// the resource cache remembers a large file's digest without its bytes.
@Suite struct LargeBodySharingTests {
    @Test func largeResourcesAreRememberedByDigestOnly() {
        let cache = ResourceCache(budget: 4000)  // holds bytes of resources up to 1000 bytes
        let small = [UInt8](repeating: 7, count: 1000), large = [UInt8](repeating: 9, count: 1001)
        let a = cache.insert(path: "/small", etag: "\"a\"", bytes: small)
        let b = cache.insert(path: "/large", etag: "\"b\"", bytes: large)
        #expect(a.bytes == small && b.bytes == large)  // the caller keeps what it read
        #expect(cache.entry(path: "/small", etag: "\"a\"")?.bytes == small)
        let digest = cache.entry(path: "/large", etag: "\"b\"")
        #expect(digest?.bytes == nil && digest?.hash == SHA256.hash(large) && digest?.count == 1001)
        #expect(cache.usage.entries == 2 && cache.usage.bytes == 1000)
        #expect(cache.entry(path: "/large", etag: "\"other\"") == nil)
        // No ETag: nothing remembered.
        _ = cache.insert(path: "/x", etag: nil, bytes: small)
        #expect(cache.usage.entries == 2)
    }

    @Test func entryCountIsBoundedLeastRecentlyUsedFirst() {
        let cache = ResourceCache(budget: 0, maxEntries: 3)  // digests only
        for i in 0..<3 { _ = cache.insert(path: "/\(i)", etag: "\"e\"", bytes: [UInt8(i)]) }
        _ = cache.entry(path: "/0", etag: "\"e\"")  // /1 is now the least recently used
        _ = cache.insert(path: "/3", etag: "\"e\"", bytes: [3])
        #expect(cache.usage.entries == 3)
        #expect(cache.entry(path: "/1", etag: "\"e\"") == nil)
        #expect(cache.entry(path: "/0", etag: "\"e\"")?.hash == SHA256.hash([0]))
    }

    @Test func fileBackedBodyIsReadAgainOnlyWhenItStillMatchesItsHash() throws {
        let url = uniqueTemporaryURL("identity")
        defer { try? FileManager.default.removeItem(at: url) }
        let original = Array("first edition of the page\n".utf8)
        try Data(original).write(to: url)
        let body = FileBody(file: try OpenFile(path: url.path))
        let identity = IdentityBody(ResourceCache.Entry(digestOnly: SHA256.hash(original), count: original.count), file: body)
        #expect(!identity.isHeld)
        #expect(try identity.bytes() == original)
        // Rewritten in place (same length, same descriptor): the bytes no longer match the hash.
        let handle = try FileHandle(forWritingTo: url)
        try handle.write(contentsOf: Data("FIRST".utf8))
        try handle.close()
        #expect(throws: IdentityBody.Changed.self) { try identity.bytes() }
        // Held bytes are returned as they are (no read).
        let held = IdentityBody(ResourceCache.Entry(bytes: original, hash: SHA256.hash(original)), file: body)
        #expect(held.isHeld)
        #expect(try held.bytes() == original)
    }

    /// Through the middleware, with a 1.9 MB file in a rule's scope and a resource cache that keeps
    /// bytes only up to 1 MB: identity answers keep the file body (sendfile), and every zstd answer
    /// hands out the same cached array (no per-request copy).
    @Test func identityKeepsTheFileAndVariantsShareOneArray() throws {
        let site = uniqueTemporaryURL("sharing")
        defer { try? FileManager.default.removeItem(at: site) }
        try FileManager.default.createDirectory(at: site.appendingPathComponent("big"), withIntermediateDirectories: true)
        let big = Array((0..<80_000).map { "row \($0 % 997) value \($0 * 7 % 10_007) text\n" }.joined().utf8)
        #expect(big.count > 1_500_000)
        try Data(big).write(to: site.appendingPathComponent("big/data.txt"))
        var settings = DCServeConfiguration.Compression()
        settings.bestLevels = settings.fastLevels  // no background re-encodes
        let store = try DirectoryDictionaryStore(directory: site.appendingPathComponent("store").path)
        let resources = ResourceCache(budget: 4 << 20)
        let middleware = DictionaryCompressionMiddleware(
            rules: try DictionaryRuleSet(rules: [DictionaryRule(name: "big", match: "/big/*")], outOfBand: []),
            settings: settings, store: store, library: DictionaryLibrary(store: store),
            variants: VariantCache(budget: 64 << 20), resources: resources,
            background: BackgroundEncoder(maxConcurrent: 1), logger: Logger(label: "test"))
        let files = try StaticFileHandler(root: site.path)

        func get(_ fields: HTTPFields) throws -> HTTPServerResponse {
            let request = HTTPServerRequest(head: HTTPRequest(method: .get, scheme: "http", authority: "localhost",
                                                              path: "/big/data.txt", headerFields: fields))
            return try awaitedResponse { middleware.handle(request, next: files, respond: $0) }  // from a worker queue
        }

        for _ in 0..<3 {
            let response = try get([.acceptEncoding: "identity"])
            #expect(response.head.status == .ok && response.head.headerFields[.useAsDictionary] != nil)
            guard case .file(let f) = response.body else { Issue.record("identity body is not the file"); return }
            #expect(try f.readAll() == big)
        }
        #expect(resources.usage.bytes == 0 && resources.usage.entries == 1)  // digest only
        #expect(store.get(SHA256.hash(big))?.bytes == big)  // stored as a dictionary all the same

        var addresses: Set<Int> = []
        for _ in 0..<3 {
            let response = try get([.acceptEncoding: "zstd"])
            #expect(response.head.headerFields[.contentEncoding] == "zstd")
            guard case .bytes(let b) = response.body else { Issue.record("zstd body is not bytes"); return }
            #expect(try ContentCoding.zstd.decode(b) == big)
            b.withUnsafeBufferPointer { _ = addresses.insert(Int(bitPattern: $0.baseAddress)) }
        }
        #expect(addresses.count == 1, "each zstd answer should be the cached array itself")
    }
}
