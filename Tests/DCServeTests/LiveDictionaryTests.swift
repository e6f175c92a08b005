@testable import DCServe
import DictionaryCodec
import HTTPTypes
import Testing

/// The pure parts of live dictionaries: partition ids, the lifetime policy, the index of
/// retained versions. End to end (proxy, example API, CLI decoders): Tests/integration/test_live_dictionaries.py.
@Suite struct LiveDictionaryTests {
    @Test func hmacMatchesRFC4231() {
        // RFC 4231 test case 2.
        let mac = PartitionID.hmacSHA256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(mac.hex == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        // Test case 6: a key longer than the block size is hashed first.
        let long = PartitionID.hmacSHA256(key: [UInt8](repeating: 0xaa, count: 131),
                                          message: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8))
        #expect(long.hex == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test func partitionsFromHeadersAndCookies() {
        let secret = Array("0123456789abcdef0123".utf8)
        var fields = HTTPFields()
        fields[.authorization] = "Bearer alice"
        fields[.cookie] = "theme=dark; session=s1"
        let a = PartitionID.fromRequest(fields, source: .header("Authorization"), secret: secret)
        #expect(a == .user(PartitionID(secret: secret, source: .header("Authorization"), credential: "Bearer alice")))
        #expect(a?.storeID?.contains("alice") == false)
        #expect(PartitionID.fromRequest(fields, source: .cookie("session"), secret: secret) == .user(PartitionID(secret: secret, source: .cookie("session"), credential: "s1")))
        #expect(PartitionID.fromRequest(HTTPFields(), source: .header("Authorization"), secret: secret) == .anonymous)
        // An empty credential (a logged-out session cookie, an empty header) is nobody's partition.
        for cookie in ["session=", "session=\"\"", "theme=dark; session="] {
            #expect(PartitionID.fromRequest([.cookie: cookie], source: .cookie("session"), secret: secret) == .anonymous, "\(cookie)")
        }
        #expect(PartitionID.fromRequest([.authorization: ""], source: .header("Authorization"), secret: secret) == .anonymous)
        #expect(.user(PartitionID(secret: Array("another secret 123".utf8), source: .header("Authorization"), credential: "Bearer alice")) != a)
        var response = HTTPFields()
        response[HTTPField.Name("Dictionary-Partition")!] = "u123"
        let u = PartitionID.fromResponse(&response, source: .upstreamHeader("Dictionary-Partition"), secret: secret)
        #expect(u == .user(PartitionID(secret: secret, source: .upstreamHeader("Dictionary-Partition"), credential: "u123")))
        #expect(response[HTTPField.Name("Dictionary-Partition")!] == nil, "removed before the client sees it")
        // The same value from another source is another partition: a client sending the upstream's
        // user id (no secret) in a header or cookie never lands in that user's partition.
        #expect(PartitionID.fromRequest([.authorization: "u123"], source: .header("Authorization"), secret: secret) != u)
        #expect(PartitionID.fromRequest([.cookie: "session=u123"], source: .cookie("session"), secret: secret) != u)
        #expect(PartitionID.fromRequest([HTTPField.Name("X-Client")!: "u123"], source: .header("X-Client"), secret: secret) != u)
        // Header names are case-insensitive: one partition whatever the configuration's spelling.
        #expect(PartitionID.fromRequest(fields, source: .header("authorization"), secret: secret) == a)
        // The domain is part of the HMAC's message: HMAC(secret, "header:authorization\n" + value).
        #expect(a?.storeID == PartitionID.hmacSHA256(key: secret, message: Array("header:authorization\nBearer alice".utf8)).hex)
        // A key on two lines, or a key cookie named twice (even with one value), is no partition at all.
        #expect(PartitionID.fromRequest(HTTPFields([HTTPField(name: .authorization, value: "Bearer a"), HTTPField(name: .authorization, value: "Bearer b")]),
                                        source: .header("Authorization"), secret: secret) == .ambiguous)
        for cookie in [["session=a; session=b"], ["session=a; session=a"], ["session=a", "theme=x; session=b"], ["session=; session=a"]] {
            #expect(PartitionID.fromRequest(HTTPFields(cookie.map { HTTPField(name: .cookie, value: $0) }), source: .cookie("session"), secret: secret)
                    == .ambiguous, "\(cookie)")
        }
        var twice = HTTPFields()
        twice.append(HTTPField(name: HTTPField.Name("Dictionary-Partition")!, value: "u1"))
        twice.append(HTTPField(name: HTTPField.Name("Dictionary-Partition")!, value: "u2"))
        #expect(PartitionID.fromResponse(&twice, source: .upstreamHeader("Dictionary-Partition"), secret: secret) == .ambiguous)
        #expect(twice[HTTPField.Name("Dictionary-Partition")!] == nil, "removed before the client sees it")
        #expect(RequestPartition.ambiguous.storeID == nil)
    }

    /// Cookie pairs are split at `;` bytes and the value ends there: `;\u{0301}` is one Character, so
    /// `String.split` gave `s1;\u{0301}x=2` as the credential (another partition than `s1`'s).
    @Test func cookiePairsSplitAtSemicolonBytes() {
        let secret = Array("0123456789abcdef0123".utf8)
        #expect(PartitionID.cookie(named: "session", in: ["session=s1;\u{0301}x=2"]) == "s1")
        #expect(PartitionID.cookie(named: "session", in: ["x=1;\u{0301}; session=s2"]) == "s2")
        #expect(PartitionID.cookie(named: "session", in: ["x=1;\u{0301}session=s3"]) == nil)
        #expect(PartitionID.fromRequest([.cookie: "session=s1;\u{0301}theme=dark"], source: .cookie("session"), secret: secret)
                == .user(PartitionID(secret: secret, source: .cookie("session"), credential: "s1")))
        // As before on ASCII: only leading spaces go, the value is kept as sent.
        #expect(PartitionID.cookie(named: "session", in: ["a=1;  session=s 1 ;b=2"]) == "s 1 ")
        #expect(PartitionID.cookie(named: "session", in: ["session =s1"]) == nil)
        #expect(PartitionID.cookie(named: "session", in: ["a=1;\tsession=s1"]) == nil)
    }

    @Test func lifetimeAllowsUseAsDictionaryOnlyWhenFreshOrStaleServable() {
        #expect(DictionaryCacheControl("max-age=60").usableSeconds == 60)
        #expect(DictionaryCacheControl("max-age=0, stale-while-revalidate=86400").usableSeconds == 86400)
        #expect(DictionaryCacheControl("no-cache").usableSeconds == nil)
        #expect(DictionaryCacheControl("max-age=60, no-store").usableSeconds == nil)
        #expect(DictionaryCacheControl("max-age=0").usableSeconds == nil)
        // An upstream's Cache-Control is outside input: huge values are capped at 2^31 (RFC 9111 §1.2.2) and
        // their sum cannot overflow; signs and junk are invalid, not negative lifetimes.
        let huge = "max-age=9223372036854775807, stale-while-revalidate=99999999999999999999999"
        #expect(DictionaryCacheControl(huge).usableSeconds == 2 << 31)
        // Int.max + 1 trapped here before (every advertised response of a rule with that lifetime).
        #expect(DictionaryCacheControl("max-age=9223372036854775807, stale-while-revalidate=1").usableSeconds == (1 << 31) + 1)
        #expect(DictionaryCacheControl("max-age=-5, stale-while-revalidate=10").usableSeconds == 10)
        #expect(DictionaryCacheControl("max-age=+60").usableSeconds == nil)
        #expect(DictionaryCacheControl("max-age=\"60\"").usableSeconds == 60)
        #expect(DictionaryCacheControl("max-age=0, must-revalidate, stale-while-revalidate=10").usableSeconds == nil)
        #expect(DictionaryCacheControl("private, max-age=30").isPrivate)
        // Directives are split at comma bytes: `,\u{0301}` is one Character, which hid `no-store`.
        #expect(DictionaryCacheControl("no-store,\u{0301}x, max-age=60").usableSeconds == nil)
        #expect(DictionaryCacheControl("max-age=60,\u{0301}x").usableSeconds == 60)
        #expect(DictionaryCacheControl("max-age=60,\u{0301}, private").isPrivate)
        #expect(DictionaryCompressionMiddleware.privately("no-cache") == "private, no-cache")
        #expect(DictionaryCompressionMiddleware.privately("private, max-age=1") == "private, max-age=1")
        #expect(DictionaryCompressionMiddleware.privately(nil) == "private")
    }

    @Test func indexKeepsTheLastVersionsPerPartition() {
        let index = LiveVersionIndex(limits: ["news": 2])
        let h = (0..<4).map { SHA256.hash([UInt8($0)]) }
        let key = LiveVersionIndex.SlotKey(rule: "news", partition: "p1", path: "/latest_news")
        index.add(h[0], at: key)
        index.add(h[1], at: key)
        #expect(index.verdict(h[0], partition: "p1") == .allowed)
        #expect(index.verdict(h[0], partition: "p2") == .otherPartition)
        #expect(index.verdict(h[3], partition: "p1") == .notLive)
        #expect(index.add(h[2], at: key).map(\.hash) == [h[0]])
        #expect(index.verdict(h[0], partition: "p1") == .pastRetention)
        #expect(index.verdict(h[1], partition: "p1") == .allowed)
        // The same bytes in another partition are that partition's own version.
        index.add(h[1], at: LiveVersionIndex.SlotKey(rule: "news", partition: "p2", path: "/latest_news"))
        #expect(index.verdict(h[1], partition: "p2") == .allowed)
        #expect(index.verdict(h[2], partition: "p2") == .otherPartition)
    }

    @Test func tenThousandPartitionsKeepTheirOwnVersions() {
        let index = LiveVersionIndex(limits: ["calendar": 2])
        let partitions = 10_000
        for p in 0..<partitions {
            for v in 0..<3 {
                index.add(SHA256.hash(Array("\(p)/\(v)".utf8)),
                          at: .init(rule: "calendar", partition: "p\(p)", path: "/api/calendar"))
            }
        }
        for p in stride(from: 0, to: partitions, by: 997) {
            #expect(index.verdict(SHA256.hash(Array("\(p)/0".utf8)), partition: "p\(p)") == .pastRetention)
            #expect(index.verdict(SHA256.hash(Array("\(p)/2".utf8)), partition: "p\(p)") == .allowed)
            #expect(index.verdict(SHA256.hash(Array("\(p)/2".utf8)), partition: "p\((p + 1) % partitions)") == .otherPartition)
        }
    }

    @Test func globalByteBudgetEvictsTheLeastRecentlyUsedAcrossPartitions() {
        // 3 versions of 100 bytes fit; each partition may keep 2.
        let index = LiveVersionIndex(limits: ["calendar": 2], maxBytes: 300)
        func h(_ s: String) -> DictionaryHash { SHA256.hash(Array(s.utf8)) }
        func key(_ p: String) -> LiveVersionIndex.SlotKey { .init(rule: "calendar", partition: p, path: "/api/calendar") }
        #expect(index.add(h("a1"), at: key("a"), bytes: 100).isEmpty)
        #expect(index.add(h("b1"), at: key("b"), bytes: 100).isEmpty)
        #expect(index.add(h("c1"), at: key("c"), bytes: 100).isEmpty)
        // a1 is named by its client: now the most recently used; b1 is the least.
        #expect(index.verdict(h("a1"), partition: "a") == .allowed)
        let evicted = index.add(h("d1"), at: key("d"), bytes: 100)
        #expect(evicted == [.init(partition: "b", hash: h("b1"))])
        #expect(index.verdict(h("b1"), partition: "b") == .pastRetention)
        #expect(index.verdict(h("b1"), partition: "a") == .otherPartition)
        #expect(index.verdict(h("a1"), partition: "a") == .allowed)
        #expect(index.totalBytes == 300 && index.count == 3)
        // A version larger than the budget alone is kept (never evicted by its own add); the rest go.
        let big = index.add(h("e1"), at: key("e"), bytes: 1000)
        #expect(Set(big.map(\.partition)) == ["a", "c", "d"])
        #expect(index.verdict(h("e1"), partition: "e") == .allowed)
        // The count cap still applies per (partition, URL) and its drops leave the budget.
        let small = LiveVersionIndex(limits: ["calendar": 1], maxBytes: 1000)
        small.add(h("x1"), at: key("x"), bytes: 400)
        #expect(small.add(h("x2"), at: key("x"), bytes: 400).map(\.hash) == [h("x1")])
        #expect(small.totalBytes == 400)
    }

    /// The same feed handed to many users is one version on disk: the budget counts it once, so seven
    /// users' two versions each fit a budget of three versions, and its bytes leave the total only with
    /// the last partition holding them.
    @Test func identicalVersionsOfManyPartitionsCountOnceInTheBudget() {
        let index = LiveVersionIndex(limits: ["news": 2], maxBytes: 3 * 12_000)
        func h(_ s: String) -> DictionaryHash { SHA256.hash(Array(s.utf8)) }
        func key(_ p: Int) -> LiveVersionIndex.SlotKey { .init(rule: "news", partition: "u\(p)", path: "/latest_news") }
        for day in ["monday", "tuesday"] {
            for p in 0..<7 { #expect(index.add(h(day), at: key(p), bytes: 12_000).isEmpty, "\(day) u\(p)") }
        }
        #expect(index.totalBytes == 24_000 && index.count == 14)
        for p in 0..<7 { #expect(index.verdict(h("monday"), partition: "u\(p)") == .allowed) }
        // Wednesday's feed: monday falls out of every user's two versions, one partition at a time; its
        // bytes leave the total with the seventh.
        for p in 0..<6 { index.add(h("wednesday"), at: key(p), bytes: 12_000) }
        #expect(index.totalBytes == 36_000)
        #expect(index.add(h("wednesday"), at: key(6), bytes: 12_000) == [.init(partition: "u6", hash: h("monday"))])
        #expect(index.totalBytes == 24_000 && index.count == 14)
        #expect(index.verdict(h("tuesday"), partition: "u0") == .allowed)
    }

    @Test func hundredThousandPartitionsLookupsAndEvictionsDoNotScan() {
        let partitions = 100_000
        // Room for half the versions: the first half of the partitions is evicted, oldest first.
        let index = LiveVersionIndex(limits: ["calendar": 3], maxBytes: partitions / 2 * 64)
        func h(_ p: Int) -> DictionaryHash { SHA256.hash(Array("calendar \(p)".utf8)) }
        var evictedTotal = 0
        for p in 0..<partitions {
            let before = index.examined
            let removed = index.add(h(p), at: .init(rule: "calendar", partition: "p\(p)", path: "/api/calendar"), bytes: 64)
            evictedTotal += removed.count
            // One add touches a bounded number of entries, whatever the number of partitions.
            #expect(index.examined - before <= 4 + 3 * removed.count)
            if p >= partitions / 2 { #expect(removed.map(\.partition) == ["p\(p - partitions / 2)"]) }
        }
        #expect(evictedTotal == partitions / 2 && index.count == partitions / 2)
        for p in stride(from: 0, to: partitions, by: 9973) {
            let before = index.examined
            let verdict = index.verdict(h(p), partition: "p\(p)")
            #expect(index.examined - before <= 2, "a lookup touches its own entry (and its LRU link)")
            #expect(verdict == (p < partitions / 2 ? .pastRetention : .allowed))
            #expect(index.verdict(h(p), partition: "p\(p + 1)") == .otherPartition)
        }
    }
}
