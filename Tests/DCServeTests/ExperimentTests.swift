@testable import DCServe
import DictionaryCodec
import DictionaryTransport
import Foundation
import HTTPServer
import HTTPTypes
import Logging
import Prometheus
import Testing
import TestSupport

/// The A/B switch: stable assignment by client id, the control group without any dictionary
/// transport (real static files, the real compression step, real codecs), the group on every response,
/// and metrics per group that add up to the number of responses.
@Suite struct ExperimentTests {
    static let clientField = HTTPField.Name("X-Client-Id")!
    static let linkField = HTTPField.Name("Link")!

    @Test func halfOfTwoThousandClientsAreControlAndStayThere() {
        let a = ExperimentAssignment(source: .header(Self.clientField), controlShare: 0.5)
        let b = ExperimentAssignment(source: .header(Self.clientField), controlShare: 0.5)  // another instance
        let ids = (0..<2000).map { "client-\($0)" }
        let groups = ids.map(a.group(ofClient:))
        let control = groups.filter { $0 == .control }.count
        #expect(abs(Double(control) / 2000 - 0.5) <= 0.03, "\(control) of 2000 in control")
        #expect(ids.map(b.group(ofClient:)) == groups)
        #expect(ids.map { a.group(of: [Self.clientField: $0]) } == groups)
        // The share is a threshold on a fixed position: a client in control at 0.3 is in control at 0.5.
        let smaller = ExperimentAssignment(source: .header(Self.clientField), controlShare: 0.3)
        for id in ids where smaller.group(ofClient: id) == .control { #expect(a.group(ofClient: id) == .control) }
        #expect(ids.allSatisfy { ExperimentAssignment(source: .header(Self.clientField), controlShare: 0).group(ofClient: $0) == .dictionary })
        #expect(ids.allSatisfy { ExperimentAssignment(source: .header(Self.clientField), controlShare: 1).group(ofClient: $0) == .control })
    }

    @Test func missingOrConflictingIdsAreUnkeyed() {
        let header = ExperimentAssignment(source: .header(Self.clientField), controlShare: 1)
        #expect(header.group(of: [:]) == .unkeyed)
        #expect(header.group(of: [Self.clientField: ""]) == .unkeyed)
        var twice = HTTPFields()
        twice.append(HTTPField(name: Self.clientField, value: "a"))
        twice.append(HTTPField(name: Self.clientField, value: "b"))
        #expect(header.group(of: twice) == .unkeyed)
        let cookie = ExperimentAssignment(source: .cookie("cid"), controlShare: 1)
        #expect(cookie.group(of: [.cookie: "theme=dark; cid=42"]) == .control)
        #expect(cookie.group(of: [.cookie: "cid=42; cid=43"]) == .unkeyed)
        #expect(cookie.group(of: [.cookie: "cidx=42"]) == .unkeyed)
    }

    /// A docroot with two versions of a bundle; the rule makes v1 a dictionary for v2.
    static func site() throws -> String {
        let dir = uniqueTemporaryURL("experiment").path
        try FileManager.default.createDirectory(atPath: dir + "/static", withIntermediateDirectories: true)
        let v1 = (0..<200).map { "export function feature\($0)() { return \"feature \($0) of the store front\"; }\n" }.joined()
        try v1.write(toFile: dir + "/static/app.v1.js", atomically: true, encoding: .utf8)
        try (v1 + "export const version = 2;\n").write(toFile: dir + "/static/app.v2.js", atomically: true, encoding: .utf8)
        return dir
    }

    static func router(site: String, registry: PrometheusCollectorRegistry) throws -> ExperimentRouter {
        let store = try DirectoryDictionaryStore(directory: site + "-store", retention: DictionaryRetention())
        let library = DictionaryLibrary(store: store)
        let variants = VariantCache(budget: 64 << 20), resources = ResourceCache(budget: 64 << 20)
        let background = BackgroundEncoder<VariantKey>(maxConcurrent: 1)
        func compression(_ rules: [DictionaryRule]) throws -> DictionaryCompressionMiddleware {
            DictionaryCompressionMiddleware(
                rules: try DictionaryRuleSet(rules: rules, outOfBand: []), settings: DCServeConfiguration.Compression(),
                store: store, library: library, variants: variants, resources: resources, background: background,
                logger: Logger(label: "test"), decisionHeader: true)
        }
        let files = try StaticFileHandler(root: site)
        var rule = DictionaryRule(name: "bundle", match: "/static/app.*.js")
        rule.matchDest = ["script"]
        return ExperimentRouter(
            assignment: ExperimentAssignment(source: .header(clientField), controlShare: 0.5),
            groupField: HTTPField.Name("DCServe-Group")!,
            control: files.wrapped(in: [try compression([])]), dictionary: files.wrapped(in: [try compression([rule])]),
            metrics: ExperimentMetrics(factory: PrometheusMetricsFactory(registry: registry)))
    }

    static func get(_ router: ExperimentRouter, _ path: String, client: String?, dictionary: [UInt8]? = nil) throws -> HTTPServerResponse {
        var fields: HTTPFields = [.acceptEncoding: "gzip, br, zstd" + (dictionary == nil ? "" : ", dcb, dcz"),
                                  HTTPField.Name("Sec-Fetch-Dest")!: "script"]
        if let client { fields[clientField] = client }
        if let dictionary { fields[.availableDictionary] = AvailableDictionary(hash: SHA256.hash(dictionary)).fieldValue }
        let request = HTTPServerRequest(head: HTTPRequest(method: .get, scheme: "http", authority: "shop.test", path: path,
                                                          headerFields: fields))
        return try awaitedResponse { router.handle(request, respond: $0) }
    }

    @Test func controlGetsNoDictionaryTransportAndMetricsAddUp() throws {
        let site = try Self.site()
        defer {
            try? FileManager.default.removeItem(atPath: site)
            try? FileManager.default.removeItem(atPath: site + "-store")
        }
        let registry = PrometheusCollectorRegistry()
        let router = try Self.router(site: site, registry: registry)
        let v1 = try #require(FileManager.default.contents(atPath: site + "/static/app.v1.js")).map { $0 }
        var counts: [ExperimentGroup: Int] = [:]
        var sent: [ExperimentGroup: Int] = [:]
        for i in 0..<2000 {
            let client: String? = i % 100 == 99 ? nil : "client-\(i)"  // 1 in 100 without an id
            let group = client.map(router.assignment.group(ofClient:)) ?? .unkeyed
            let first = try Self.get(router, "/static/app.v1.js", client: client)
            let second = try Self.get(router, "/static/app.v2.js", client: client, dictionary: v1)
            for response in [first, second] {
                let fields = response.head.headerFields
                #expect(fields[HTTPField.Name("DCServe-Group")!] == group.fieldValue)
                #expect(fields[values: .vary].joined(separator: ",").contains("X-Client-Id"))
                counts[group, default: 0] += 1
                sent[group, default: 0] += Int(response.body.knownLength ?? 0)
            }
            let coding = second.head.headerFields[.contentEncoding] ?? "identity"
            let note = first.accessLogNote.map { $0.description } ?? ""
            var written = ""
            first.accessLogNote?.append(to: &written)
            #expect(written == note, "the note written into the access-log line is its description")
            if group == .control {
                #expect(first.head.headerFields[.useAsDictionary] == nil && second.head.headerFields[.useAsDictionary] == nil)
                #expect(first.head.headerFields[Self.linkField] == nil && second.head.headerFields[Self.linkField] == nil)
                #expect(!["dcb", "dcz"].contains(coding), "client-\(i): control got \(coding)")
                #expect(note.hasSuffix("group=control"), "\(note)")
            } else {
                #expect(first.head.headerFields[.useAsDictionary] != nil)
                #expect(["dcb", "dcz"].contains(coding), "client-\(i): dictionary group got \(coding)")
                #expect(note.hasSuffix(group == .unkeyed ? "group=dictionary keyed=no" : "group=dictionary"), "\(note)")
            }
        }
        #expect(abs(Double(counts[.control, default: 0]) / Double(2 * 1980) - 0.5) <= 0.03)
        #expect(counts[.unkeyed] == 40)
        // Metrics: per group, the sums over rules equal what the clients received.
        let text = registry.emitToString()
        func sum(_ metric: String, _ group: ExperimentGroup) -> Int {
            text.split(separator: "\n").filter { $0.hasPrefix(metric + "{") && $0.contains("group=\"\(group.rawValue)\"") }
                .reduce(0) { $0 + Int(Double($1.split(separator: " ").last!)!) }
        }
        for group in ExperimentGroup.allCases {
            #expect(sum("dcserve_experiment_responses_total", group) == counts[group, default: 0], "\(group)")
            #expect(sum("dcserve_experiment_sent_bytes_total", group) == sent[group, default: 0], "\(group)")
        }
        #expect(ExperimentGroup.allCases.map { sum("dcserve_experiment_responses_total", $0) }.reduce(0, +) == 4000)
        #expect(sum("dcserve_experiment_identity_bytes_total", .control) > sum("dcserve_experiment_sent_bytes_total", .control))
    }
}
