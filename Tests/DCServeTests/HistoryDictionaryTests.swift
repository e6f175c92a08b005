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

/// History dictionaries: the group pattern, the window, the build budget, the index, and
/// the builder with a real directory store. End to end (proxy, example API, CLI decoders):
/// Tests/integration/test_history_dictionaries.py.
@Suite struct HistoryDictionaryTests {
    @Test func groupPatternFindsTheConversationAndScopesTheMatch() throws {
        let g = try HistoryGroupPattern("/api/chats/:chat/*")
        #expect(g.prefix == "/api/chats" && g.name == "chat" && g.rest == "/*")
        #expect(g.value(in: "/api/chats/42/messages") == "42")
        #expect(g.value(in: "/api/chats/a-b_c.d~e/x") == "a-b_c.d~e")
        #expect(g.value(in: "/api/chats/4%2F2/x") == nil, "only plain tokens are groups")
        #expect(g.value(in: "/api/chatsX/1/x") == nil)
        #expect(g.value(in: "/api/chats//x") == nil)
        #expect(g.value(in: "/api/chats/../x") == nil)
        #expect(g.value(in: Substring("/api/chats/" + String(repeating: "a", count: 129))) == nil)
        #expect(g.scopedMatch("42") == "/api/chats/42/*")
        #expect(g.groupPath("42") == "/api/chats/42")
        #expect(try URLPattern(g.scopedMatch("42"), base: nil).matches(path: "/api/chats/42/messages"))
        #expect(try HistoryGroupPattern("/c/:id").rest == "")
        for bad in ["/api/chats/*", "/api/*/:chat", "/api/chats/:chat?", "/api/chats/x:chat", ":chat", "/api/chats/:/x",
                    "/api/:a{x}/y", "/api/chats/:chat+"] {
            #expect(throws: HistoryGroupPattern.Invalid.self, "\(bad)") { try HistoryGroupPattern(bad) }
        }
    }

    @Test func windowKeepsDistinctBodiesNewestLastWithinItsCapacity() {
        var w = HistoryWindow(capacity: 10)
        let a: [UInt8] = [1, 1, 1, 1], b: [UInt8] = [2, 2, 2], c: [UInt8] = [3, 3, 3, 3, 3]
        let addedA = w.add(a), addedB = w.add(b), againA = w.add(a)
        #expect(addedA && addedB)
        #expect(!againA, "the same content again is not new")
        #expect(w.bodies == [b, a] && w.newBytes == 7 && w.totalBytes == 7)
        w.markBuilt()
        let addedC = w.add(c)
        #expect(addedC)
        #expect(w.bodies == [a, c] && w.totalBytes == 9 && w.newBytes == 5, "the oldest went")
        let addedEmpty = w.add([]), addedLarge = w.add([UInt8](0..<20))
        #expect(!addedEmpty && addedLarge)
        #expect(w.bodies == [Array(10..<20)], "a body larger than the window keeps its end")
        #expect(HistoryWindow.dictionary(from: [a, b, c], maxBytes: 6) == [2, 3, 3, 3, 3, 3], "newest last, older tails")
        #expect(HistoryWindow.dictionary(from: [a, b, c], maxBytes: 100) == a + b + c)
    }

    @Test func buildBudgetAllowsSoManyMillisecondsPerMinute() {
        var budget = HistoryBuildBudget(millisecondsPerMinute: 1000)
        let t0 = Date(timeIntervalSince1970: 1_000_000)
        var allowed: [Bool] = []
        allowed.append(budget.allows(at: t0))
        budget.charge(.milliseconds(600), at: t0)
        allowed.append(budget.allows(at: t0.addingTimeInterval(10)))
        budget.charge(.milliseconds(600), at: t0.addingTimeInterval(10))
        allowed.append(budget.allows(at: t0.addingTimeInterval(59)))
        allowed.append(budget.allows(at: t0.addingTimeInterval(61)))  // a new minute
        #expect(allowed == [true, true, false, true])
    }

    @Test func indexAnswersByPartitionHashAndPath() throws {
        let index = HistoryDictionaryIndex()
        let now = Date(timeIntervalSince1970: 1_000_000)
        let pattern = try URLPattern("/api/chats/42/*", base: nil)
        let key = HistoryDictionaryIndex.GroupKey(rule: "chats", group: "42", partition: "p1")
        let h = (0..<6).map { SHA256.hash([UInt8($0)]) }
        func member(_ i: Int, _ key: HistoryDictionaryIndex.GroupKey = key, lifetime: Double = 3600) -> HistoryDictionaryIndex.Member {
            .init(key: key, hash: h[i], pattern: pattern, id: "chat:42", expires: now.addingTimeInterval(lifetime), built: now)
        }
        for i in 0..<5 { index.publish(member(i), keep: 4, now: now) }
        #expect(index.current(key, now: now)?.hash == h[4])
        #expect(index.verdict(h[0], partition: "p1", path: "/api/chats/42/messages", now: now) == .refused, "beyond keep")
        guard case .allowed(let candidate, _) = index.verdict(h[1], partition: "p1", path: "/api/chats/42/messages", now: now) else {
            Issue.record("h1 should be allowed"); return
        }
        #expect(candidate.pattern.source == "/api/chats/42/*")
        #expect(index.verdict(h[1], partition: "p2", path: "/api/chats/42/messages", now: now) == .refused, "other partition")
        #expect(index.verdict(h[1], partition: "p1", path: "/api/chats/43/messages", now: now) == .refused, "other group")
        #expect(index.verdict(h[1], partition: "p1", path: "/api/chats/42/messages", now: now.addingTimeInterval(3601)) == .refused)
        #expect(index.verdict(h[5], partition: "p1", path: "/api/chats/42/messages", now: now) == .notHistory)
        // The same bytes for the other participant: a second member, independent of the first.
        let other = HistoryDictionaryIndex.GroupKey(rule: "chats", group: "42", partition: "p2")
        index.publish(member(4, other), keep: 4, now: now)
        #expect(index.members(of: h[4], now: now).count == 2)
        #expect(index.verdict(h[4], partition: "p2", path: "/api/chats/42/x", now: now) != .refused)
        // Republishing refreshes the expiry and makes it newest.
        index.publish(member(2, lifetime: 7200), keep: 4, now: now)
        #expect(index.current(key, now: now)?.hash == h[2])
        #expect(index.pruneExpired(now: now.addingTimeInterval(4000)) == 1)
        #expect(index.current(key, now: now.addingTimeInterval(4000))?.hash == h[2])
        #expect(index.verdict(h[4], partition: "p2", path: "/api/chats/42/x", now: now.addingTimeInterval(4000)) == .refused)
    }

    @Test func indexLearnsDictionariesOtherInstancesStoredInBuildOrder() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("history-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let history = try Self.history(try Self.historyRule(), store: try DirectoryDictionaryStore(directory: dir, retention: DictionaryRetention()))
        let now = Date()
        let h = (0..<4).map { SHA256.hash([UInt8($0)]) }
        func record(_ i: Int, built: Date, partition: String = "p1", rule: String = "chats") -> DictionaryMetadata {
            DictionaryMetadata(hash: h[i].hex, match: "/api/chats/42/*", pathPattern: "/api/chats/42/*", matchDestinations: [],
                               id: "chat:42", rule: rule, sourcePath: "/api/chats/42", firstServed: built, lastServed: built,
                               maxAge: 3600, expires: built.addingTimeInterval(3600), byteSize: 1, partition: partition)
        }
        let key = HistoryDictionaryIndex.GroupKey(rule: "chats", group: "42", partition: "p1")
        history.learn(record(1, built: now))
        // An older build whose notification came late does not become the current one.
        history.learn(record(0, built: now.addingTimeInterval(-10)))
        #expect(history.index.current(key, now: now)?.hash == h[1])
        #expect(history.index.verdict(h[0], partition: "p1", path: "/api/chats/42/messages", now: now) != .refused)
        // A newer one does; learning a held one again changes nothing.
        history.learn(record(2, built: now.addingTimeInterval(5)))
        history.learn(record(1, built: now))
        #expect(history.index.current(key, now: now)?.hash == h[2])
        // Still by (partition, hash, path) only; records of other rules are not history dictionaries.
        history.learn(record(3, built: now, partition: "p2"))
        #expect(history.index.verdict(h[3], partition: "p1", path: "/api/chats/42/messages", now: now) == .refused)
        #expect(history.index.verdict(h[2], partition: "p1", path: "/api/chats/43/messages", now: now) == .refused)
        let other = SHA256.hash([9])
        var foreign = record(0, built: now, rule: "news")
        foreign.hash = other.hex
        history.learn(foreign)
        #expect(history.index.verdict(other, partition: "p1", path: "/api/chats/42/messages", now: now) == .notHistory)
    }

    static func historyRule(_ configure: (inout HistoryDictionarySettings) -> Void = { _ in }) throws -> DictionaryRuleSet {
        var rule = DictionaryRule(name: "chats", match: "/api/chats/:chat/*")
        var settings = HistoryDictionarySettings()
        settings.firstBuildBytes = 100
        settings.rebuildBytes = 100
        settings.maxDictionaryBytes = 256
        settings.windowBytes = 512
        configure(&settings)
        rule.history = settings
        rule.partition = .header("Authorization")
        return try DictionaryRuleSet(rules: [rule], outOfBand: [])
    }

    /// The history side of a server over `store` (its own library, no partition secret).
    static func history(_ rules: DictionaryRuleSet, store: any DictionaryStore) throws -> HistoryDictionaries {
        try #require(HistoryDictionaries(rules: rules, store: store, library: DictionaryLibrary(store: store),
                                         partitionSecret: [], logger: Logger(label: "test")))
    }

    static func body(_ i: Int) -> [UInt8] {
        Array("{\"id\":\(i),\"text\":\"message number \(i) about the tram line\",\"author\":\"alice\"}".utf8)
    }

    @Test func builderStoresPublishesAndSurvivesARestart() throws {
        let dir = uniqueTemporaryURL("history").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try DirectoryDictionaryStore(directory: dir, retention: DictionaryRetention())
        let rules = try Self.historyRule()
        let history = try Self.history(rules, store: store)
        let builder = try #require(history.builders["chats"])
        let key = HistoryDictionaryIndex.GroupKey(rule: "chats", group: "42", partition: "p1")
        builder.collect(Self.body(1), groupValue: "42", partition: "p1")
        builder.waitForBuilds()
        #expect(history.index.current(key, now: Date()) == nil, "not enough new content yet")
        builder.collect(Self.body(2), groupValue: "42", partition: "p1")
        builder.waitForBuilds()
        let first = try #require(history.index.current(key, now: Date()))
        #expect(store.get(first.hash) == nil, "a partitioned dictionary is never found by hash alone")
        let stored = try #require(store.get(first.hash, partition: "p1"))
        #expect(stored.bytes == Self.body(1) + Self.body(2), "newest content last")
        #expect(stored.metadata.match == "/api/chats/42/*" && stored.metadata.id == "chat:42")
        #expect(stored.metadata.partition == "p1" && stored.metadata.rule == "chats" && stored.metadata.maxAge == 3600)
        #expect(history.library.lookup(first.hash, partition: "p1") != nil)
        #expect(history.library.lookup(first.hash, partition: "p2") == nil)
        // More content: a new dictionary of at most maxBytes, the old one still accepted.
        for i in 3...6 { builder.collect(Self.body(i), groupValue: "42", partition: "p1") }
        builder.waitForBuilds()
        let second = try #require(history.index.current(key, now: Date()))
        #expect(second.hash != first.hash)
        #expect(try #require(store.get(second.hash, partition: "p1")).bytes.count <= 256)
        for hash in [first.hash, second.hash] {
            #expect(history.index.verdict(hash, partition: "p1", path: "/api/chats/42/m", now: Date()) != .refused)
            #expect(history.index.verdict(hash, partition: "p2", path: "/api/chats/42/m", now: Date()) == .refused)
        }
        // Another group's window is separate.
        builder.collect(Self.body(1), groupValue: "43", partition: "p1")
        builder.waitForBuilds()
        #expect(history.index.current(.init(rule: "chats", group: "43", partition: "p1"), now: Date()) == nil)
        // A restart rebuilds the index from the store's records.
        try store.flush()
        let reopened = try DirectoryDictionaryStore(directory: dir, retention: DictionaryRetention())
        let again = try Self.history(rules, store: reopened)
        #expect(again.index.current(key, now: Date())?.hash == second.hash)
        #expect(again.index.verdict(first.hash, partition: "p1", path: "/api/chats/42/m", now: Date()) != .refused)
        #expect(again.index.verdict(first.hash, partition: "p2", path: "/api/chats/42/m", now: Date()) == .refused)
    }

    /// A dictionary URL whose bytes are only in the store (evicted from memory, or after a restart)
    /// is answered from a worker queue with the stored bytes; another partition still gets 404.
    @Test func dictionaryURLIsServedFromTheStoreWhenNotInMemory() throws {
        let dir = uniqueTemporaryURL("history").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try DirectoryDictionaryStore(directory: dir, retention: DictionaryRetention())
        let rules = try Self.historyRule()
        let rule = try #require(rules.rules.first)
        let history = try Self.history(rules, store: store)
        let alice: HTTPFields = [.authorization: "Bearer alice"]
        let partition = history.partition(of: alice, rule: rule)!
        let builder = try #require(history.builders["chats"])
        for i in 1...2 { builder.collect(Self.body(i), groupValue: "42", partition: partition) }
        builder.waitForBuilds()
        let current = try #require(history.index.current(.init(rule: "chats", group: "42", partition: partition), now: Date()))
        // A fresh library over the same store: the bytes are on disk only.
        let cold = try Self.history(rules, store: store)
        #expect(!cold.library.isLoaded(current.hash))
        let middleware = HistoryDictionaryMiddleware(history: cold)
        let url = HistoryDictionaryURL.path(for: current.hash, groupPath: "/api/chats/42", pattern: current.pattern)
        let next = ClosureHandler { _, respond in respond(HTTPServerResponse(status: .internalServerError)) }
        /// The response, and whether it was given on the calling thread (the event loop's, in a server).
        func get(_ fields: HTTPFields) throws -> (HTTPServerResponse, inline: Bool) {
            let request = HTTPServerRequest(head: testRequest(url, authority: "a", fields: fields))
            let caller = pthread_self()
            let inline = Locked(false)
            let response = try awaitedResponse { respond in
                middleware.handle(request, next: next) { r in
                    inline.withLock { $0 = pthread_equal(pthread_self(), caller) != 0 }
                    respond(r)
                }
            }
            return (response, inline.withLock { $0 })
        }
        let (response, inline) = try get(alice)
        #expect(!inline, "the store read ran on the calling thread")
        #expect(response.head.status == .ok && response.head.headerFields[.useAsDictionary] != nil)
        guard case .bytes(let bytes) = response.body else { Issue.record("not a byte body"); return }
        #expect(bytes == Self.body(1) + Self.body(2))
        #expect(cold.library.isLoaded(current.hash))
        #expect(try get(alice).inline, "a dictionary in memory is answered at once")
        #expect(try get([.authorization: "Bearer bob"]).0.head.status == .notFound)
    }

    /// A GET of `path` through `middleware`, its upstream answering `upstream`'s next body.
    static func get(_ path: String, _ fields: HTTPFields, through middleware: HistoryDictionaryMiddleware,
                    upstream: @escaping @Sendable () -> [UInt8]) throws -> HTTPServerResponse {
        let next = ClosureHandler { _, respond in
            respond(HTTPServerResponse(status: .ok, headerFields: [.contentType: "application/json"], body: .bytes(upstream())))
        }
        let request = HTTPServerRequest(head: testRequest(path, authority: "a", fields: fields))
        return try awaitedResponse { respond in middleware.handle(request, next: next, respond: respond) }
    }

    /// Early Link: the response whose body completes a group's first dictionary carries that
    /// dictionary's `Link`, and the dictionary is usable at once — its URL answers and a request may
    /// name it — while its store write is still waiting (the store's `put` is held shut); the write
    /// then lands, and a restart finds it.
    @Test func firstDictionaryIsOfferedByTheResponseThatCompletesItBeforeTheStoreHoldsIt() throws {
        let dir = uniqueTemporaryURL("history").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = GatedDictionaryStore(try DirectoryDictionaryStore(directory: dir, retention: DictionaryRetention()))
        defer { store.open() }
        let rules = try Self.historyRule()
        let rule = try #require(rules.rules.first)
        let history = try Self.history(rules, store: store)
        let middleware = HistoryDictionaryMiddleware(history: history)
        let alice: HTTPFields = [.authorization: "Bearer alice"], bob: HTTPFields = [.authorization: "Bearer bob"]
        let partition = history.partition(of: alice, rule: rule)!
        let served = Locked(0)
        let upstream: @Sendable () -> [UInt8] = { Self.body(served.withLock { $0 += 1; return $0 }) }
        let plain = try Self.get("/api/chats/42/messages", alice, through: middleware, upstream: upstream)
        #expect(plain.head.headerFields[HistoryDictionaryMiddleware.link] == nil, "below firstBuildBytes")
        // body(1) + body(2) reach firstBuildBytes (100): the second response offers the dictionary made of both.
        let completing = try Self.get("/api/chats/42/messages", alice, through: middleware, upstream: upstream)
        let bytes = Self.body(1) + Self.body(2)
        let hash = SHA256.hash(bytes)
        let url = "/api/chats/42/.dcserve-dictionary/\(hash.hex)"
        #expect(completing.head.headerFields[HistoryDictionaryMiddleware.link] == "<\(url)>; rel=\"compression-dictionary\"",
                "the response completing the first dictionary offers it")
        #expect(store.awaitWaitingPuts(1) && store.base.get(hash, partition: partition) == nil, "the store write is queued, held")
        // Usable at once: the URL answers from memory; a request naming it may use it; nobody else may.
        let fetched = try Self.get(url, alice, through: middleware, upstream: upstream)
        #expect(fetched.head.status == .ok)
        #expect(fetched.head.headerFields[.useAsDictionary] == "match=\"/api/chats/42/*\", id=\"chat:42\"")
        guard case .bytes(let body) = fetched.body else { Issue.record("not a byte body"); return }
        #expect(body == bytes)
        #expect(try Self.get(url, bob, through: middleware, upstream: upstream).head.status == .notFound)
        #expect(history.index.verdict(hash, partition: partition, path: "/api/chats/42/messages", now: Date()) != .refused)
        #expect(history.index.verdict(hash, partition: partition, path: "/api/chats/43/messages", now: Date()) == .refused)
        #expect(history.index.verdict(hash, partition: history.partition(of: bob, rule: rule)!, path: "/api/chats/42/messages",
                                      now: Date()) == .refused)
        #expect(history.library.lookup(hash, partition: partition)?.dictionary.bytes == bytes)
        // The next response offers it as the current one (no second build: the write is still pending).
        let later = try Self.get("/api/chats/42/messages", alice, through: middleware, upstream: upstream)
        #expect(later.head.headerFields[HistoryDictionaryMiddleware.link] == "<\(url)>; rel=\"compression-dictionary\"")
        #expect(store.waitingPuts == 1)
        // The write lands in the background; a restart rebuilds the index from it.
        store.open()
        history.waitForBuilds()
        let stored = try #require(store.base.get(hash, partition: partition))
        #expect(stored.bytes == bytes && stored.metadata.match == "/api/chats/42/*" && stored.metadata.id == "chat:42")
        #expect(stored.metadata.rule == "chats" && stored.metadata.maxAge == 3600)
        try store.flush()
        let reopened = try DirectoryDictionaryStore(directory: dir, retention: DictionaryRetention())
        let again = try Self.history(rules, store: reopened)
        let key = HistoryDictionaryIndex.GroupKey(rule: "chats", group: "42", partition: partition)
        #expect(again.index.current(key, now: Date())?.hash == hash)
        // After the restart the group has a dictionary (with a fresh window): its next build is a
        // background one, like every rebuild — offered only once stored.
        let restarted = HistoryDictionaryMiddleware(history: again)
        let link = "<\(url)>; rel=\"compression-dictionary\""
        for _ in 0..<2 {
            let response = try Self.get("/api/chats/42/messages", alice, through: restarted, upstream: upstream)
            #expect(response.head.headerFields[HistoryDictionaryMiddleware.link] == link, "nothing new offered early")
        }
        again.waitForBuilds()
        let rebuilt = try #require(again.index.current(key, now: Date()))
        #expect(rebuilt.hash != hash && reopened.get(rebuilt.hash, partition: partition) != nil, "stored before it was published")
    }

    /// A first dictionary whose store write fails (its record's path is taken by a directory) stays
    /// offered and is served from memory; the group's next content builds again in the background,
    /// stored before it is offered; a restart forgets the one that was never stored.
    @Test func firstDictionaryWhoseStoreWriteFailsIsServedFromMemoryUntilARebuildIsStored() throws {
        let dir = uniqueTemporaryURL("history").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try DirectoryDictionaryStore(directory: dir, retention: DictionaryRetention())
        let rules = try Self.historyRule()
        let rule = try #require(rules.rules.first)
        let history = try Self.history(rules, store: store)
        let middleware = HistoryDictionaryMiddleware(history: history)
        let alice: HTTPFields = [.authorization: "Bearer alice"]
        let partition = history.partition(of: alice, rule: rule)!
        let key = HistoryDictionaryIndex.GroupKey(rule: "chats", group: "42", partition: partition)
        let served = Locked(0)
        let upstream: @Sendable () -> [UInt8] = { Self.body(served.withLock { $0 += 1; return $0 }) }
        let bytes = Self.body(1) + Self.body(2)
        let hash = SHA256.hash(bytes)
        let url = "/api/chats/42/.dcserve-dictionary/\(hash.hex)"
        let obstacle = dir + "/" + DirectoryDictionaryStore.recordName(hash, partition: partition)
        try FileManager.default.createDirectory(atPath: obstacle, withIntermediateDirectories: false)
        _ = try Self.get("/api/chats/42/messages", alice, through: middleware, upstream: upstream)
        let completing = try Self.get("/api/chats/42/messages", alice, through: middleware, upstream: upstream)
        #expect(completing.head.headerFields[HistoryDictionaryMiddleware.link] == "<\(url)>; rel=\"compression-dictionary\"")
        history.waitForBuilds()
        #expect(store.get(hash, partition: partition) == nil, "the write failed")
        #expect(history.index.current(key, now: Date())?.hash == hash, "still offered")
        let fetched = try Self.get(url, alice, through: middleware, upstream: upstream)
        guard case .bytes(let body) = fetched.body else { Issue.record("not a byte body"); return }
        #expect(fetched.head.status == .ok && body == bytes, "served from memory")
        try FileManager.default.removeItem(atPath: obstacle)
        // firstBuildBytes of new content: a background build (the group has a dictionary), stored first.
        for _ in 3...4 { _ = try Self.get("/api/chats/42/messages", alice, through: middleware, upstream: upstream) }
        history.waitForBuilds()
        let second = try #require(history.index.current(key, now: Date()))
        #expect(second.hash != hash && store.get(second.hash, partition: partition) != nil)
        #expect(history.index.verdict(hash, partition: partition, path: "/api/chats/42/m", now: Date()) != .refused,
                "clients holding the first one keep using it")
        try store.flush()
        let reopened = try DirectoryDictionaryStore(directory: dir, retention: DictionaryRetention())
        let again = try Self.history(rules, store: reopened)
        #expect(again.index.current(key, now: Date())?.hash == second.hash)
        #expect(again.index.verdict(hash, partition: partition, path: "/api/chats/42/m", now: Date()) == .notHistory)
    }

    /// A first dictionary larger than ``HistoryDictionaryBuilder/maxRequestPathBytes`` is not made on
    /// the request path: `collect` returns nothing, and the background build stores it before it is
    /// published.
    @Test func largeFirstDictionaryIsBuiltInTheBackground() throws {
        let dir = uniqueTemporaryURL("history").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try DirectoryDictionaryStore(directory: dir, retention: DictionaryRetention())
        let limit = HistoryDictionaryBuilder.maxRequestPathBytes
        let history = try Self.history(try Self.historyRule {
            $0.firstBuildBytes = limit + 1; $0.maxDictionaryBytes = 2 * limit; $0.windowBytes = 4 * limit
        }, store: store)
        let builder = try #require(history.builders["chats"])
        let key = HistoryDictionaryIndex.GroupKey(rule: "chats", group: "42", partition: "p1")
        let big = Array(repeating: UInt8(ascii: "a"), count: limit) + Self.body(1)
        #expect(builder.collect(big, groupValue: "42", partition: "p1") == nil, "not on the request path")
        builder.waitForBuilds()
        let member = try #require(history.index.current(key, now: Date()))
        #expect(try #require(store.get(member.hash, partition: "p1")).bytes == big)
        // At the limit, the first dictionary is still offered by the response that completes it.
        let small = try Self.history(try Self.historyRule {
            $0.firstBuildBytes = limit; $0.maxDictionaryBytes = limit; $0.windowBytes = 2 * limit
        }, store: store)
        let early = try #require(small.builders["chats"]).collect(Array(repeating: UInt8(ascii: "b"), count: limit),
                                                                   groupValue: "7", partition: "p1")
        #expect(early != nil)
        try #require(small.builders["chats"]).waitForBuilds()
    }

    @Test func builderCapsTheGroupsItTracks() throws {
        let dir = uniqueTemporaryURL("history").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try DirectoryDictionaryStore(directory: dir, retention: DictionaryRetention())
        let history = try Self.history(try Self.historyRule { $0.maxGroups = 3 }, store: store)
        let builder = try #require(history.builders["chats"])
        for g in 0..<10 { builder.collect(Self.body(g), groupValue: Substring("\(g)"), partition: "p") }
        #expect(builder.groupCount == 3)
        builder.waitForBuilds()
    }

    @Test func configurationNamesTheBadHistoryKey() {
        func error(_ change: (inout DictionaryRule) -> Void) -> String? {
            var c = DCServeConfiguration()
            var rule = DictionaryRule(name: "chats", match: "/api/chats/:chat/*")
            rule.history = HistoryDictionarySettings()
            change(&rule)
            c.rules = [rule]
            do { try c.validate(); return nil } catch let e as ConfigurationError { return e.key } catch { return "\(error)" }
        }
        #expect(error { _ in } == nil)
        #expect(error { $0.match = "/api/chats/*"; $0.resources = $0.match; $0.compress = [$0.match] } == "dictionaries.chats.match")
        #expect(error { $0.partition = .upstreamHeader("X-User") } == "dictionaries.chats.partition")
        #expect(error { $0.upstreamVersions = 2 } == "dictionaries.chats.upstreamVersions")
        #expect(error { $0.history?.windowBytes = 1000 } == "dictionaries.chats.history.windowBytes")
        #expect(error { $0.history?.maxDictionaryBytes = 10 } == "dictionaries.chats.history.maxBytes")
        #expect(error { $0.history?.keep = 0 } == "dictionaries.chats.history.keep")
        #expect(error { $0.history?.buildMillisecondsPerMinute = 0 } == "dictionaries.chats.history.buildMillisecondsPerMinute")
    }

    /// The two parsers of outside input added here (request paths → group value, dictionary URL → hash)
    /// on 20,000 random and mutated paths, with a fixed seed: never a crash, and what they accept is
    /// consistent (a parsed group value is a plain token; a parsed URL names the hash it carries).
    @Test func pathParsersHoldOnRandomInput() throws {
        var rng = SplitMix64(seed: 0x5eed_1600)
        let g = try HistoryGroupPattern("/api/chats/:chat/*")
        let hash = SHA256.hash([1, 2, 3])
        let seeds = ["/api/chats/42/messages", "/api/chats/42/.dcserve-dictionary/\(hash.hex)",
                     "/.well-known/dcserve-dictionary/\(hash.hex)", "/api/chats/%2e%2e/x", "/api/chats//", "/"]
        let alphabet = Array("/.%:*?#{}()\\-_~aZ09 \u{0}é".unicodeScalars)
        for i in 0..<20_000 {
            var scalars = Array(seeds[i % seeds.count].unicodeScalars)
            for _ in 0..<Int.random(in: 0...6, using: &rng) {
                let at = scalars.isEmpty ? 0 : Int.random(in: 0...scalars.count, using: &rng)
                switch Int.random(in: 0...2, using: &rng) {
                case 0: scalars.insert(alphabet.randomElement(using: &rng)!, at: at)
                case 1: if at < scalars.count { scalars.remove(at: at) }
                default: if at < scalars.count { scalars[at] = alphabet.randomElement(using: &rng)! }
                }
            }
            let path = Substring(String(String.UnicodeScalarView(scalars)))
            if let value = g.value(in: path) {
                #expect(!value.isEmpty && value.utf8.allSatisfy(HistoryGroupPattern.isUnreserved))
                #expect(path.hasPrefix("/api/chats/\(value)"))
            }
            if let url = HistoryDictionaryURL.parse(path) {
                #expect(path.hasSuffix(url.hash.hex))
                if let group = url.groupPath { #expect(path == group + "/.dcserve-dictionary/" + url.hash.hex) }
            }
            _ = try? HistoryGroupPattern(String(path))
        }
    }
}

