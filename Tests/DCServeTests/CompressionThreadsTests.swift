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
import Locking

/// Large-body compression runs on the middleware's own threads (`compressionThreads`), so requests
/// waiting inside SingleFlight — followers of an identical encode, large encodes waiting for a slot —
/// hold no thread of Dispatch's shared pool (on Linux it adds about one thread per second while its
/// threads wait, and serves its queue in order), and hold up no other client's large response; and
/// identical requests still encode once, concurrent large encodes stay capped.
///
/// Real middleware, static files, codecs and store; encodes are held in progress by an observer whose
/// `encoded` (called inside the leader's computation, while it holds its large slot) waits on a gate.
@Suite(.serialized) struct CompressionThreadsTests {
    /// Holds every encode of `heldCoding` inside the leader's computation until `open()`, and counts them.
    final class GateObserver: CompressionObserver {
        let heldCoding: ContentCoding
        let gate = DispatchGroup()
        let inside = Atomic<Int>(0), peak = Atomic<Int>(0), encodes = Atomic<Int>(0)
        init(holding coding: ContentCoding) {
            heldCoding = coding
            gate.enter()
        }
        func open() { gate.leave() }
        func encoded(coding: ContentCoding, level: Int, duration: Duration) {
            guard coding == heldCoding else { return }
            encodes.add(1, ordering: .sequentiallyConsistent)
            let now = inside.add(1, ordering: .sequentiallyConsistent).newValue
            peak.max(now, ordering: .sequentiallyConsistent)
            _ = gate.wait(timeout: .now() + 120)
            inside.subtract(1, ordering: .sequentiallyConsistent)
        }
        func decided(_ decision: EncodingDecision, path: Substring) {}
        func variantCache(hit: Bool) {}
        func storedDictionary(_ hash: DictionaryHash, bytes: Int) {}
        func sizes(rule: String?, identity: Int, bestPlain: Int, sent: Int) {}
    }

    /// A static site with `files` (name → bytes) and a middleware over it reporting to `observer`.
    struct Site {
        let root: URL
        let middleware: DictionaryCompressionMiddleware
        let files: StaticFileHandler

        init(_ contents: [String: [UInt8]], observer: GateObserver) throws {
            root = uniqueTemporaryURL("compress-threads")
            try FileManager.default.createDirectory(at: root.appendingPathComponent("files"), withIntermediateDirectories: true)
            for (name, bytes) in contents { try Data(bytes).write(to: root.appendingPathComponent("files/\(name)")) }
            var settings = DCServeConfiguration.Compression()
            settings.bestLevels = settings.fastLevels  // no background re-encodes
            let store = try DirectoryDictionaryStore(directory: root.appendingPathComponent("store").path)
            middleware = DictionaryCompressionMiddleware(
                rules: try DictionaryRuleSet(rules: [], outOfBand: []), settings: settings, store: store,
                library: DictionaryLibrary(store: store), variants: VariantCache(budget: 256 << 20),
                resources: ResourceCache(budget: 256 << 20), background: BackgroundEncoder(maxConcurrent: 1),
                observer: observer, logger: Logger(label: "test"))
            files = try StaticFileHandler(root: root.path)
        }

        /// Starts a GET of `/files/<name>` accepting `coding`; the response goes to `responses`.
        func get(_ name: String, _ coding: ContentCoding, into responses: Responses) {
            let request = HTTPServerRequest(head: HTTPRequest(method: .get, scheme: "http", authority: "localhost",
                                                              path: "/files/\(name)",
                                                              headerFields: [.acceptEncoding: coding.rawValue]))
            middleware.handle(request, next: files) { responses.add(name, $0) }
        }

        func remove() { try? FileManager.default.removeItem(at: root) }
    }

    final class Responses: Sendable {
        let all = Locked<[(String, HTTPServerResponse)]>([])
        func add(_ name: String, _ response: HTTPServerResponse) { all.withLock { $0.append((name, response)) } }
        var count: Int { all.withLock { $0.count } }
        func names() -> [String] { all.withLock { $0.map(\.0) } }
    }

    static func text(_ seed: Int, bytes: Int) -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        while out.count < bytes {
            out += Array("row \(i % 997) of \(seed): value \(i * 7 % 10_007) text\n".utf8)
            i += 1
        }
        return Array(out.prefix(bytes))
    }

    static func body(_ response: HTTPServerResponse) -> [UInt8] {
        switch response.body {
        case .bytes(let b): b
        case .file(let f): (try? f.readAll()) ?? []
        default: []
        }
    }

    /// Polls `condition` every 5 ms for at most `seconds` (bounded).
    static func eventually(_ seconds: Double = 20, _ condition: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while !condition() {
            if Date() > deadline { return false }
            usleep(5_000)
        }
        return true
    }

    /// Whether an item queued on `DispatchQueue.global(qos: .userInitiated)` now runs within 10 s (on
    /// the previous placement it queued behind every parked request, about a second each).
    static func dispatchPoolIsFree() -> Bool {
        let ran = DispatchSemaphore(value: 0)
        DispatchQueue.global(qos: .userInitiated).async { ran.signal() }
        return ran.wait(timeout: .now() + 10) == .success
    }

    /// 40 identical requests for a 200 KB file (off the loop, below the large-slot size) while the
    /// first one's encode is held: the 39 followers wait without holding Dispatch's pool, and when the
    /// encode ends all 40 get its one result.
    @Test func followersOfAnEncodeInProgressHoldNoDispatchThread() throws {
        let observer = GateObserver(holding: .gzip)
        let page = Self.text(1, bytes: 200_000)
        let site = try Site(["page.txt": page], observer: observer)
        defer { site.remove() }
        let responses = Responses()
        var opened = false
        defer { if !opened { observer.open() } }
        for _ in 0..<40 { site.get("page.txt", .gzip, into: responses) }
        #expect(Self.eventually { observer.inside.load(ordering: .sequentiallyConsistent) == 1 })
        #expect(Self.dispatchPoolIsFree(), "Dispatch's pool was held by requests waiting for the encode")
        #expect(responses.count == 0)
        observer.open()
        opened = true
        #expect(Self.eventually { responses.count == 40 }, "\(responses.count) of 40 responses")
        #expect(observer.encodes.load(ordering: .sequentiallyConsistent) == 1)  // one encode for all
        for (_, response) in responses.all.withLock({ $0 }) {
            #expect(response.head.headerFields[.contentEncoding] == "gzip")
            #expect(try ContentCoding.gzip.decode(Self.body(response)) == page)
        }
    }

    /// 24 distinct 1.1 MB files (large: they take one of the core-count slots) asked for as zstd while
    /// the slot holders' encodes are held: no more encodes start than the cap, the slot waiters hold no
    /// Dispatch thread, and another client's 200 KB gzip response is answered meanwhile. Then every
    /// file is encoded exactly once, never more than the cap at a time.
    @Test func largeEncodesWaitingForASlotHoldNoThreadOthersNeed() throws {
        let observer = GateObserver(holding: .zstd)
        let names = (0..<24).map { "large\($0).txt" }
        var contents = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, Self.text($0, bytes: 1_100_000)) })
        contents["medium.txt"] = Self.text(99, bytes: 200_000)
        let site = try Site(contents, observer: observer)
        defer { site.remove() }
        let cap = ProcessInfo.processInfo.activeProcessorCount
        let responses = Responses()
        var opened = false
        defer { if !opened { observer.open() } }
        for name in names { site.get(name, .zstd, into: responses) }
        #expect(Self.eventually { observer.inside.load(ordering: .sequentiallyConsistent) == cap })
        usleep(200_000)
        #expect(observer.encodes.load(ordering: .sequentiallyConsistent) == cap, "the large-encode cap did not hold")
        #expect(Self.dispatchPoolIsFree(), "Dispatch's pool was held by large encodes waiting for a slot")
        // Another client's large (off-loop) response is not queued behind the waiting ones.
        site.get("medium.txt", .gzip, into: responses)
        #expect(Self.eventually { responses.names().contains("medium.txt") }, "the gzip response waited for the large encodes")
        #expect(responses.count == 1)
        observer.open()
        opened = true
        #expect(Self.eventually(120) { responses.count == 25 }, "\(responses.count) of 25 responses")
        #expect(observer.encodes.load(ordering: .sequentiallyConsistent) == 24)
        #expect(observer.peak.load(ordering: .sequentiallyConsistent) == cap)
        for (name, response) in responses.all.withLock({ $0 }) {
            let coding: ContentCoding = name == "medium.txt" ? .gzip : .zstd
            #expect(response.head.headerFields[.contentEncoding] == coding.rawValue)
            #expect(try coding.decode(Self.body(response)) == contents[name])
        }
    }
}
