@testable import DCServe
import DictionaryCodec
import DictionaryTransport
import Foundation
import HTTPServer
import HTTPTypes
import Synchronization
import Testing
import TestSupport

/// The `DCServe-Decision` value, the access-log note and the metric labels of every decision kind.
@Suite struct ResponseDecisionTests {
    let hash = SHA256.hash(Array("dictionary".utf8))

    @Test func deltaAgainstBestPlain() {
        let d = ResponseDecision(.delta(.dcz, hash), rule: "assets", identityBytes: 10_000, bestPlainBytes: 2_000,
                                 bestPlainCoding: "br", sentBytes: 140)
        #expect(d.fieldValue == "delta=dcz dict=\(hash.hex.prefix(16)) saved=93% vs=br rule=assets")
        #expect(d.logNote == "decision=dcz@\(hash.hex.prefix(16)) rule=assets")
        #expect(d.kind == "delta" && d.reasonLabel == "hit" && d.coding == "dcz")
    }

    @Test func deltaWithoutKnownPlainSizeClaimsNoSaving() {
        // Identity is no baseline unless it is the client's best plain coding: no `saved=` at all.
        let d = ResponseDecision(.delta(.dcb, hash), identityBytes: 1_000, sentBytes: 10)
        #expect(d.fieldValue == "delta=dcb dict=\(hash.hex.prefix(16))")
        #expect(d.savedPercent == nil)
        let identityBest = ResponseDecision(.delta(.dcb, hash), identityBytes: 1_000, bestPlainBytes: 1_000,
                                            bestPlainCoding: "identity", sentBytes: 10)
        #expect(identityBest.fieldValue == "delta=dcb dict=\(hash.hex.prefix(16)) saved=99% vs=identity")
    }

    @Test func deltaLargerThanPlainSavesZeroNotNegative() {
        let d = ResponseDecision(.delta(.dcz, hash), identityBytes: 100, bestPlainBytes: 50, bestPlainCoding: "gzip", sentBytes: 80)
        #expect(d.savedPercent?.percent == 0)
        #expect(ResponseDecision(.delta(.dcz, hash), identityBytes: 0, sentBytes: 9).savedPercent == nil)
    }

    @Test func plainReasons() {
        let d = ResponseDecision(.plain("br", .unknownDictionary), rule: "assets")
        #expect(d.fieldValue == "plain=br reason=unknown-dictionary rule=assets")
        #expect(d.logNote == "decision=br:unknown-dictionary rule=assets")
        #expect(ResponseDecision(.plain("identity", .noTransform)).fieldValue == "plain=identity reason=no-transform")
        #expect(ResponseDecision(.plain("gzip", .upstreamEncoded)).logNote == "decision=gzip:upstream-encoded")
    }

    @Test func partitionMismatchLooksUnknownToTheClientOnly() {
        let d = ResponseDecision(.plain("zstd", .partitionMismatch), rule: "calendar")
        #expect(d.fieldValue == "plain=zstd reason=unknown-dictionary rule=calendar")
        #expect(d.logNote == "decision=zstd:partition-mismatch rule=calendar")
        #expect(d.reasonLabel == "partition-mismatch")
    }

    @Test func notAcceptable() {
        let d = ResponseDecision(.notAcceptable)
        #expect(d.fieldValue == "not-acceptable reason=not-acceptable")
        #expect(d.logNote == "decision=406")
        #expect(d.kind == "not-acceptable")
    }

    @Test func everyNegotiationReasonMapsToADistinctLabel() {
        let labels = EncodingDecision.PlainReason.allCases.map { DecisionReason($0).rawValue }
        #expect(Set(labels).count == labels.count)
        #expect(DecisionReason(.unknownHash) == .unknownDictionary)
        #expect(DecisionReason(.alreadyEncoded) == .upstreamEncoded)
        for reason in DecisionReason.allCases {
            #expect(reason.rawValue.allSatisfy { $0.isLowercase || $0 == "-" }, "\(reason)")
        }
    }

    @Test func logNoteIsFormattedLazily() {
        let note = DecisionLogNote(decision: ResponseDecision(.plain("identity", .bodyTooSmall)))
        #expect(note.description == "decision=identity:body-too-small")
    }
}

/// The live view's bounded ring, time buckets and JSON.
@Suite struct LiveViewDataTests {
    @Test func ringKeepsTheLastValuesInOrder() {
        let ring = BoundedRing<Int>(capacity: 3)
        #expect(ring.snapshot().isEmpty)
        for i in 1...2 { ring.append(i) }
        #expect(ring.snapshot() == [1, 2])
        for i in 3...7 { ring.append(i) }
        #expect(ring.snapshot() == [5, 6, 7])
        #expect(ring.appendedCount == 7)
    }

    @Test func ringIsSafeUnderConcurrentAppends() async {
        let ring = BoundedRing<Int>(capacity: 200)
        await withTaskGroup(of: Void.self) { group in
            for t in 0..<8 {
                group.addTask { for i in 0..<1_000 { ring.append(t * 1_000 + i) } }
            }
        }
        #expect(ring.appendedCount == 8_000)
        #expect(ring.snapshot().count == 200)
        #expect(Set(ring.snapshot()).count == 200)
    }

    @Test func timelineBucketsByTenSecondsAndFillsGaps() {
        let timeline = SavingsTimeline(bucketSeconds: 10, bucketCount: 6)
        let t0 = Date(timeIntervalSince1970: 1_000)
        timeline.add(identity: 1_000, bestPlain: 300, sent: 30, at: t0)
        timeline.add(identity: 1_000, bestPlain: 300, sent: 40, at: t0.addingTimeInterval(9))
        timeline.add(identity: 500, bestPlain: 500, sent: 500, at: t0.addingTimeInterval(30))
        let buckets = timeline.snapshot(now: t0.addingTimeInterval(35))
        #expect(buckets.map(\.start) == [980, 990, 1_000, 1_010, 1_020, 1_030])
        #expect(buckets[2].responses == 2 && buckets[2].sent == 70 && buckets[2].saved == 530)
        #expect(buckets[5].saved == 0 && buckets[5].identity == 500)
        #expect(buckets[3] == SavingsTimeline.Bucket(start: 1_010))
    }

    @Test func timelineDropsOldBuckets() {
        let timeline = SavingsTimeline(bucketSeconds: 10, bucketCount: 3)
        for i in 0..<10 { timeline.add(identity: 1, bestPlain: 1, sent: 1, at: Date(timeIntervalSince1970: Double(i * 10))) }
        let buckets = timeline.snapshot(now: Date(timeIntervalSince1970: 95))
        #expect(buckets.map(\.start) == [70, 80, 90])
        #expect(buckets.allSatisfy { $0.responses == 1 })
    }

    @Test func snapshotJSONShowsDictionariesRequestsAndNoSecrets() throws {
        let dir = uniqueTemporaryURL("live-view")
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try DirectoryDictionaryStore(directory: dir.path)
        let bytes = Array(String(repeating: "shared dictionary text ", count: 50).utf8)
        let partition = String(repeating: "ab", count: 32)
        let hash = try store.put(bytes, description: DictionaryDescription(
            pattern: try URLPattern("/api/calendar*", base: nil), matchDestinations: ["document"], rule: "calendar",
            sourcePath: "/api/calendar", maxAge: 60, partition: partition), now: Date())
        let activity = LiveActivity(recentCapacity: 2)
        let delta = ResponseDecision(.delta(.dcz, hash), rule: "calendar", identityBytes: 1_000, bestPlainBytes: 400,
                                     bestPlainCoding: "br", sentBytes: 40)
        activity.responded(ResponseRecord(method: "GET", path: "/api/calendar", status: 200, decision: delta))
        activity.responded(ResponseRecord(method: "GET", path: "/api/calendar", status: 200, decision: delta))
        activity.responded(ResponseRecord(method: "GET", path: "/x", status: 404, decision: ResponseDecision(.plain("identity", .notOK))))
        activity.sizes(rule: "calendar", identity: 1_000, bestPlain: 400, sent: 40)

        let json = try JSONSerialization.jsonObject(with: Data(LiveViewSnapshot(store: store, activity: activity).json())) as! [String: Any]
        let dictionaries = json["dictionaries"] as! [[String: Any]]
        #expect(dictionaries.count == 1)
        let d = dictionaries[0]
        #expect(d["hash"] as? String == String(hash.hex.prefix(16)))
        #expect(d["rule"] as? String == "calendar" && d["match"] as? String == "/api/calendar*")
        #expect(d["matchDest"] as? [String] == ["document"] && d["size"] as? Int == bytes.count)
        #expect(d["hits"] as? Int == 2 && d["partition"] as? String == "abababab")
        let requests = json["requests"] as! [[String: Any]]
        #expect(requests.count == 2)  // ring of 2: the oldest delta dropped
        #expect(requests[0]["status"] as? Int == 404 && requests[0]["reason"] as? String == "status")
        #expect(requests[1]["decision"] as? String == "delta" && requests[1]["sent"] as? Int == 40)
        #expect(json["requestsSeen"] as? Int == 3)
        #expect((json["totals"] as! [String: Any])["saved"] as? Int == 360)
        let text = String(decoding: LiveViewSnapshot(store: store, activity: activity).json(), as: UTF8.self)
        #expect(!text.contains(partition))
    }
}

/// The middleware's decision per response, through a real static site and store (MemoFixture):
/// reported once per response (computed or memoised), in the access-log note, and in the field only
/// when enabled, added after the memo so a memoised head never carries another request's decision.
@Suite struct MiddlewareDecisionTests {
    func respond(_ f: MemoFixture, _ path: String, _ fields: HTTPFields = [:], method: HTTPRequest.Method = .get) throws -> HTTPServerResponse {
        let request = HTTPServerRequest(head: HTTPRequest(method: method, scheme: "http", authority: "localhost",
                                                          path: path, headerFields: fields))
        return try awaitedResponse { f.middleware.handle(request, next: f.files, respond: $0) }
    }

    @Test func everyResponseReportsItsDecision() throws {
        let f = try MemoFixture()
        let v1 = try respond(f, "/static/app.v1.js")
        #expect(v1.head.headerFields[HTTPField.Name(ResponseDecision.fieldName)!] == nil, "off by default")
        #expect(v1.accessLogNote?.description == "decision=identity:no-dictionary-offered rule=bundle")
        let offer: HTTPFields = [.acceptEncoding: "dcz", .availableDictionary: MemoFixture.available(MemoFixture.v1)]
        let hex = SHA256.hash(MemoFixture.v1).hex.prefix(16)
        _ = f.observer.take()
        for _ in 0..<4 {  // computed, then from the memo: one report each, the same decision
            let delta = try respond(f, "/static/app.v2.js", offer)
            #expect(delta.head.headerFields[.contentEncoding] == "dcz")
            #expect(delta.accessLogNote?.description == "decision=dcz@\(hex) rule=bundle")
            var line = "GET /static/app.v2.js 200 "  // what the access log writes: the same text, in place
            delta.accessLogNote?.append(to: &line)
            #expect(line == "GET /static/app.v2.js 200 decision=dcz@\(hex) rule=bundle")
        }
        let reports = f.observer.take().filter { $0.hasPrefix("responded") }
        #expect(reports.count == 4)
        #expect(reports.allSatisfy { $0.hasPrefix("responded GET /static/app.v2.js 200 delta=dcz dict=\(hex) saved=") })
        _ = try respond(f, "/static/none.js")
        _ = try respond(f, "/static/app.v2.js", method: .post)
        #expect(f.observer.take().filter { $0.hasPrefix("responded") } == [
            "responded GET /static/none.js 404 plain=identity reason=status",
            "responded POST /static/app.v2.js 405 plain=identity reason=method rule=bundle",
        ])
    }

    @Test func fieldIsAddedPerResponseNeverMemoised() throws {
        let f = try MemoFixture(decisionHeader: true)
        let name = HTTPField.Name(ResponseDecision.fieldName)!
        _ = try respond(f, "/static/app.v1.js")
        let offer: HTTPFields = [.acceptEncoding: "dcz, gzip", .availableDictionary: MemoFixture.available(MemoFixture.v1)]
        let plain: HTTPFields = [.acceptEncoding: "gzip"]
        for _ in 0..<3 {
            let delta = try respond(f, "/static/app.v2.js", offer)
            #expect(delta.head.headerFields[values: name].count == 1)
            #expect(delta.head.headerFields[name]?.hasPrefix("delta=dcz dict=") == true)
            let other = try respond(f, "/static/app.v2.js", plain)
            #expect(other.head.headerFields[values: name] == ["plain=gzip reason=no-dictionary-offered rule=bundle"])
        }
        #expect(f.middleware.memo.count >= 1, "the responses above were memoised")
    }
}
