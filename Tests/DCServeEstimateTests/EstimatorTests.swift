import DCServe
import DictionaryCodec
@testable import DCServeEstimate
import Foundation
import Testing

/// The estimate replays through a real in-process dcserve: a live feed whose versions differ a little
/// becomes deltas after the first visit, per client partition; the byte counts come from the wire.
@Suite struct EstimatorTests {
    /// A feed of `n` articles, newest first; each article's text is distinct (hex of its hash), so
    /// plain codings cannot shrink it the way a delta against the previous version does.
    static func feed(_ n: Int) -> String {
        let items = (1...n).reversed().map { i in
            let text = SHA256.hash(Array("article \(i)".utf8)).hex
            return #"{\"id\":\#(i),\"title\":\"Article \#(i): \#(text.prefix(24))\",\"body\":\"\#(text)\"}"#
        }
        return #"{\"count\":\#(n),\"articles\":[\#(items.joined(separator: ","))]}"#
    }

    /// The body a feed's HAR text stands for (the JSON string escapes removed).
    static func decoded(_ text: String) -> String { text.replacingOccurrences(of: "\\\"", with: "\"") }

    static func entry(_ second: Int, _ path: String, body: String, user: String? = nil, method: String = "GET") -> String {
        let auth = user.map { #",{"name":"Authorization","value":"Bearer \#($0)"}"# } ?? ""
        return #"{"startedDateTime":"2026-11-27T10:00:\#(String(format: "%02d", second))Z","request":{"method":"\#(method)","url":"http://api.test\#(path)","headers":[{"name":"Accept","value":"*/*"}\#(auth)]},"response":{"status":200,"statusText":"OK","headers":[{"name":"Content-Type","value":"application/json"},{"name":"Cache-Control","value":"no-cache"},{"name":"Content-Encoding","value":"gzip"}],"content":{"size":\#(body.utf8.count),"mimeType":"application/json","text":"\#(body)"}}}"#
    }

    static func configuration(partitionHeader: String? = nil) throws -> DCServeConfiguration {
        var c = try ConfigurationLoader.load(contents: Array(#"{"admin": {"enabled": false}}"#.utf8), environment: [:])
        var rule = DictionaryRule(name: "news", match: "/latest_news")
        rule.lifetime = DictionaryLifetime(configured: "max-age=0, stale-while-revalidate=86400")
        if let partitionHeader { rule.partition = .header(partitionHeader) }
        c.rules = [rule]
        return c
    }

    @Test func liveFeedBecomesDeltasAfterTheFirstVisit() async throws {
        let entries = (0..<5).map { Self.entry($0 * 2, "/latest_news", body: Self.feed(20 + $0)) }
            + [Self.entry(11, "/other", body: Self.feed(3))]
        let archive = try HTTPArchive.parse(HTTPArchiveTests.har(entries))
        let report = try await Estimator(configuration: try Self.configuration()).estimate(archive, file: "t.har")
        #expect(report.replayed == 6)
        let news = try #require(report.rules.first { $0.name == "news" })
        #expect(news.totals.requests == 5)
        #expect(news.totals.hits == 4)
        #expect(news.totals.misses == ["first-visit": 1])
        #expect(report.rules.last?.name == EstimateReport.noRule)
        #expect(report.rules.last?.totals.misses == ["no-rule": 1])
        #expect(news.totals.dictionaryBytes < news.totals.plainBytes * 2 / 3, "\(news.totals)")
        #expect(news.totals.identityBytes == (0..<5).map { Self.decoded(Self.feed(20 + $0)).utf8.count }.reduce(0, +))
        #expect(news.totals.plainCodings.keys.allSatisfy { ["br", "zstd"].contains($0) }, "\(news.totals.plainCodings)")
        #expect(report.requests.map(\.dictionaryCoding).dropFirst().prefix(4).allSatisfy { $0 == "dcz" || $0 == "dcb" })
        #expect(report.totals.requests == 6 && report.groups.map(\.name) == ["/latest_news", "/other"])
        // Every byte counted: the sums over rules and over groups equal the totals.
        #expect(report.rules.map(\.totals.dictionaryBytes).reduce(0, +) == report.totals.dictionaryBytes)
        #expect(report.groups.map(\.totals.plainBytes).reduce(0, +) == report.totals.plainBytes)
        let html = EstimateHTMLReport.render(report)
        #expect(html.contains(#"<svg class="group-plot" data-group="/latest_news""#) && html.contains(#"<table id="rules">"#))
        #expect(!html.contains("http://") || !html.contains("<script"))
    }

    @Test func eachUserIsOwnClientInAPartitionedRule() async throws {
        var entries: [String] = []
        for i in 0..<3 {
            entries.append(Self.entry(i * 4, "/latest_news", body: Self.feed(20 + i) + "alice", user: "alice"))
            entries.append(Self.entry(i * 4 + 1, "/latest_news", body: Self.feed(30 + i) + "bob", user: "bob"))
        }
        let archive = try HTTPArchive.parse(HTTPArchiveTests.har(entries))
        let report = try await Estimator(configuration: try Self.configuration(partitionHeader: "Authorization")).estimate(archive, file: "t.har")
        let news = try #require(report.rules.first { $0.name == "news" })
        #expect(news.totals.hits == 4)
        #expect(news.totals.misses == ["first-visit": 2])
    }

    @Test func missingBodiesAreNotReplayedAndNamed() async throws {
        var entries = [Self.entry(0, "/latest_news", body: Self.feed(20)), Self.entry(2, "/latest_news", body: Self.feed(21))]
        entries.append(#"{"startedDateTime":"2026-11-27T10:00:01Z","request":{"method":"GET","url":"http://api.test/latest_news","headers":[]},"response":{"status":200,"headers":[],"content":{"size":999}}}"#)
        entries.append(#"{"startedDateTime":"2026-11-27T10:00:03Z","request":{"method":"GET","url":"http://cdn.test/x.png","headers":[]},"response":{"status":200,"headers":[],"content":{"size":3,"text":"AAEC","encoding":"base64"}}}"#)
        let archive = try HTTPArchive.parse(HTTPArchiveTests.har(entries))
        let report = try await Estimator(configuration: try Self.configuration()).estimate(archive, file: "t.har")
        #expect(report.replayed == 2)
        #expect(report.skipped.map(\.entry).sorted() == [2, 3])
        #expect(report.skipped.contains { $0.entry == 2 && $0.reason.contains("not captured") })
        #expect(report.skipped.contains { $0.entry == 3 && $0.reason.contains("another origin") })
        #expect(report.rules.first?.totals.hits == 1)
    }
}
