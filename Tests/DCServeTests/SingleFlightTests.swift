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
import Locking

/// Identical concurrent requests encode once per variant and read each resource once.
@Suite struct SingleFlightTests {
    @Test func concurrentCallersForOneKeyShareOneEncode() throws {
        let flights = SingleFlight<Int, CachedVariant>(maxConcurrentLarge: 1, largeInputBytes: 10)
        let encodes = Atomic<Int>(0)
        let arrived = Atomic<Int>(0)
        let stored = Locked<CachedVariant?>(nil)
        let results = Locked<[CachedVariant]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            arrived.add(1, ordering: .relaxed)
            let (v, _) = try! flights.run(7, inputBytes: 100, cached: { stored.withLock { $0 } }) {
                encodes.add(1, ordering: .relaxed)
                // Hold the flight until every caller has arrived (bounded), so they overlap.
                for _ in 0..<2_000 where arrived.load(ordering: .relaxed) < 8 { usleep(1_000) }
                let v = CachedVariant(bytes: [1, 2, 3], level: 3)
                stored.withLock { $0 = v }
                return v
            }
            results.withLock { $0.append(v) }
        }
        #expect(encodes.load(ordering: .relaxed) == 1)
        #expect(results.withLock { $0 } == Array(repeating: CachedVariant(bytes: [1, 2, 3], level: 3), count: 8))
    }

    @Test func followersGetTheLeadersErrorAndDistinctKeysEncodeSeparately() throws {
        struct Boom: Error {}
        let flights = SingleFlight<Int, CachedVariant>(maxConcurrentLarge: 2)
        #expect(throws: Boom.self) { try flights.run(1, inputBytes: 1, cached: { nil }) { throw Boom() } }
        let encodes = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 4) { i in
            _ = try! flights.run(i, inputBytes: 1, cached: { nil }) {
                encodes.add(1, ordering: .relaxed)
                return CachedVariant(bytes: [UInt8(i)], level: 1)
            }
        }
        #expect(encodes.load(ordering: .relaxed) == 4)
    }

    /// Through the middleware: 8 identical concurrent requests for a 4 MB resource encode it once.
    @Test func identicalConcurrentRequestsEncodeOnce() throws {
        let f = try MemoFixture()
        let big = Array((0..<60_000).map { "row \($0 % 977) value \($0 * 7 % 10_007) text\n" }.joined().utf8)
        try Data(big).write(to: f.site.appendingPathComponent("static/big.js"))
        // A slow level, so the eight requests overlap while the first one encodes.
        var settings = DCServeConfiguration.Compression()
        settings.fastLevels[.zstd] = 19
        settings.bestLevels = settings.fastLevels
        let observer = RecordingObserver()
        let middleware = DictionaryCompressionMiddleware(
            rules: try DictionaryRuleSet(rules: [], outOfBand: []), settings: settings, store: f.store,
            library: DictionaryLibrary(store: f.store), variants: VariantCache(budget: 64 << 20),
            resources: ResourceCache(budget: 64 << 20), background: BackgroundEncoder(maxConcurrent: 1),
            observer: observer, logger: Logger(label: "test"))
        let fields: HTTPFields = [.acceptEncoding: "zstd"]
        let bodies = Locked<[[UInt8]]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            // Large bodies are answered from a worker queue: wait for the response (bounded).
            let done = DispatchSemaphore(value: 0)
            let request = HTTPServerRequest(head: HTTPRequest(method: .get, scheme: "http", authority: "localhost",
                                                              path: "/static/big.js", headerFields: fields))
            middleware.handle(request, next: f.files) { response in
                #expect(response.head.headerFields[.contentEncoding] == "zstd")
                if case .bytes(let b) = response.body { bodies.withLock { $0.append(b) } }
                done.signal()
            }
            #expect(done.wait(timeout: .now() + 120) == .success)
        }
        let encodes = observer.take().filter { $0.hasPrefix("encoded zstd") }
        #expect(encodes.count == 1, "\(encodes)")
        let all = bodies.withLock { $0 }
        #expect(all.count == 8 && Set(all.map { $0.count }).count == 1)
        #expect(try ContentCoding.zstd.decode(all[0]) == big)
    }
}
