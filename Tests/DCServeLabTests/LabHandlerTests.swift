@testable import DCServeLab
import DictionaryCodec
import HTTPServer
import HTTPTypes
import PropertyBased
import Testing

/// The lab's HTTP interface driven in-process: grading of what a client sent, and hostile input.
@Suite struct LabHandlerTests {
    func get(_ handler: LabHandler, _ path: String, _ fields: [(String, String)] = [],
             method: HTTPRequest.Method = .get, body: [UInt8] = []) -> HTTPServerResponse {
        var head = HTTPRequest(method: method, scheme: "http", authority: "127.0.0.1", path: path)
        for (name, value) in fields { head.headerFields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return handler.answer(HTTPServerRequest(head: head, body: body))
    }

    func body(_ response: HTTPServerResponse) -> String {
        if case .bytes(let b) = response.body { return String(decoding: b, as: UTF8.self) }
        return ""
    }

    @Test func namingAnExpiredDictionaryFailsWithExpectedAndGot() throws {
        let lab = LabHandler()
        #expect(get(lab, "/lab/plan.json?run=u1").head.status == .ok)
        let hash = LabGrader.hash(run: "u1", scenario: "expired", dictionary: "main")
        _ = get(lab, "/lab/r/u1/expired/dict.js")
        _ = get(lab, "/lab/r/u1/expired/app.probe.js?try=0", [("Available-Dictionary", hash.structuredFieldBinary)])
        #expect(body(get(lab, "/lab/r/u1/ready/expired.probe")).contains("\"ready\" : true"))
        let response = get(lab, "/lab/r/u1/expired/app.v2.js",
                           [("Available-Dictionary", hash.structuredFieldBinary), ("Accept-Encoding", "dcz")])
        #expect(response.head.headerFields[.contentEncoding] == "dcz")
        let results = LabGrader.grade(try #require(lab.runs.snapshot(run: "u1")))
        let expired = try #require(results.scenarios.first { $0.id == "expired" })
        #expect(expired.status == "failed")
        #expect(expired.failures.contains { $0.hasPrefix("use: expected this request at least 6.0 s after register") })
        #expect(expired.failures.contains { $0.contains("expected no Available-Dictionary, got \(hash.structuredFieldBinary) (dictionary main)") })
        #expect(results.scenarios.filter { $0.status == "not run" }.count == LabScenarioCatalog.scenarios.count - 1)
    }

    @Test func wrongHashResponseNamesTheDecoyNotTheAdvertisedDictionary() throws {
        let lab = LabHandler()
        let hash = LabGrader.hash(run: "u2", scenario: "wrong-hash", dictionary: "main")
        let response = get(lab, "/lab/r/u2/wrong-hash/app.v2.js",
                           [("Available-Dictionary", hash.structuredFieldBinary), ("Accept-Encoding", "dcb, dcz")])
        #expect(response.head.headerFields[.contentEncoding] == "dcb")
        guard case .bytes(let bytes) = response.body else { Issue.record("no body"); return }
        let header = try DictionaryFrameHeader.parse(bytes, expecting: .dcb)
        #expect(header.hash != hash)
    }

    static let hostile: [Character] = Array("/lab/r/.?=&%+:{}\"' \t\\ab-_09éregistration")
    static let strings = Gen<Character?>.element(of: hostile).map { $0! }.string(of: 0...60)

    @Test func hostileRequestsGetAnAnswerBelow500() async {
        let lab = LabHandler()
        // Prefixes that reach every route, so the hostile part lands in run ids, steps, resources, queries.
        let prefixes = ["/", "/lab/", "/lab/plan.json?run=", "/lab/r/", "/lab/r/x/", "/lab/r/x/registration/",
                        "/lab/r/x/report/", "/lab/r/x/report/registration.use?", "/lab/r/x/ready/", "/lab/runs/"]
        await propertyCheck(count: 500, input: Self.strings, Self.strings) { path, extra in
            for prefix in prefixes {
                for method in [HTTPRequest.Method.get, .post, .head] {
                    let response = get(lab, prefix + path, [("Available-Dictionary", extra), ("Dictionary-ID", extra)],
                                       method: method, body: Array(extra.utf8))
                    #expect(response.head.status.code < 500, "\(method) \(prefix)\(path)")
                }
            }
        }
        #expect(lab.runs.runIDs().count <= lab.runs.maxRuns)
    }
}
