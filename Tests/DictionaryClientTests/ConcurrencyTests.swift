import DictionaryClient
import DictionaryClientSystemCodecs
import DictionaryCodec
import Foundation
import HTTPTypes
import Testing
import TestSupport

/// Fetches a linked dictionary by "serving" it from a table: the transport seam the real adapter fills.
struct TableFetcher: DictionaryLinkFetcher {
    let client: DictionaryClient
    let table: [String: [UInt8]]
    func fetchDictionary(_ target: ClientRequestTarget, partition: String) async throws {
        let request = try await client.prepare(url: target.description, partition: partition)
        guard let body = table[target.path] else { throw DictionaryClientError.invalidURL(target.description) }
        _ = try await client.process(ClientResponse(status: 200, fields: fields(
            ("use-as-dictionary", #"match="/news/*""#), ("cache-control", "max-age=100")), body: body), for: request)
    }
}

@Suite struct ConcurrencyTests {
    /// Many tasks register, prepare and decode at once against one client and one disk store; every
    /// decode must be exact and the limits must hold. (ThreadSanitizer runs of this suite check races.)
    @Test func concurrentUseIsSafe() async throws {
        let dir = makeTemporaryDirectory("dclient-tests")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let clock = TestClock()
        let store = try ClientDictionaryStore(location: .directory(dir), limits: ClientStoreLimits(maxCount: 8))
        let client = DictionaryClient(store: store, decoders: .systemLibraries, now: clock.function)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for round in 0..<10 {
                        let name = "w\(worker)r\(round % 3)"
                        let dict = sampleText(worker * 100 + round, count: 4000)
                        let r1 = try await client.prepare(url: "https://example.com/\(name)/dict", partition: "p\(worker % 3)")
                        _ = try await client.process(ClientResponse(status: 200, fields: fields(
                            ("use-as-dictionary", "match=\"/\(name)/*\""), ("cache-control", "max-age=100")), body: dict), for: r1)
                        let r2 = try await client.prepare(url: "https://example.com/\(name)/data", partition: "p\(worker % 3)")
                        guard let d = r2.dictionary else { continue }  // evicted by another worker meanwhile
                        let payload = sampleText(worker * 100 + round + 1, count: 5000)
                        let body = try ContentCoding.dcz.encode(payload, dictionary: d, level: 3)
                        let out = try await client.process(ClientResponse(status: 200, fields: fields(("content-encoding", "dcz")), body: body), for: r2)
                        #expect(out.body == payload)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(store.entries().count <= 8)
        #expect(try ClientDictionaryStore(location: .directory(dir)).entries().count == store.entries().count)
    }

    @Test func linkQueueFetchesInTheBackgroundAndIsBounded() async throws {
        let clock = TestClock()
        let store = try ClientDictionaryStore(location: .memory)
        let plain = DictionaryClient(store: store, decoders: .systemLibraries, now: clock.function)
        let fetcher = TableFetcher(client: plain, table: ["/d/news.dict": bytes("news dictionary")])
        let queue = DictionaryLinkQueue(fetcher: fetcher, maxPending: 2, maxConcurrent: 1)
        let client = DictionaryClient(store: store, decoders: .systemLibraries, linkQueue: queue, now: clock.function)
        let request = try await client.prepare(url: "https://example.com/news/today")
        _ = try await client.process(ClientResponse(status: 200, fields: fields(
            ("link", #"</d/news.dict>; rel="compression-dictionary", </d/missing1>; rel="compression-dictionary", </d/missing2>; rel="compression-dictionary""#)),
            body: []), for: request)
        await queue.drain()
        let counts = queue.counts
        #expect(counts.completed == 1)
        #expect(counts.completed + counts.failed + counts.dropped == 3)
        #expect(counts.dropped >= 1)
        let next = try await client.prepare(url: "https://example.com/news/tomorrow")
        #expect(next.dictionary?.bytes == bytes("news dictionary"))
    }
}
