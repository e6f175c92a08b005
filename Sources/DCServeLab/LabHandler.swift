import Foundation
import HTTPServer
import HTTPTypes

/// The lab's HTTP interface (all under `/lab/`):
///
/// - `GET /lab/` — the browser page that runs the whole suite (self-contained HTML + JS).
/// - `GET /lab/plan.json[?run=ID]` — the plan of a new run (or of run ID; 1–40 of `A-Za-z0-9_-`).
/// - `GET|HEAD /lab/r/<run>/<scenario>/<resource>` — a scenario resource; every such request is recorded.
/// - `GET /lab/r/<run>/ready/<step>` — `{"ready": bool}` for a probe step.
/// - `POST /lab/r/<run>/report/<step>` with `{"sha256": "<hex>"}` or `{"error": "<why>"}` (JSON), or
///   `GET` with `?sha256=` / `?error=` — what the client decoded (or why it refused the response).
/// - `GET /lab/runs/<run>/results.json` and `GET /lab/runs/<run>/` — the graded results, JSON and HTML.
/// - `GET /lab/runs.json` — the runs the lab remembers, most recent first.
///
/// Bad input gets a 4xx with the reason. Thread-safety: immutable; the ``LabRunStore`` is thread-safe.
public struct LabHandler: HTTPHandler {
    let runs: LabRunStore

    public init() { runs = LabRunStore() }

    public func handle(_ request: HTTPServerRequest, respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        respond(answer(request))
    }

    func answer(_ request: HTTPServerRequest) -> HTTPServerResponse {
        let path = String(request.pathWithoutQuery)
        let query = Self.query(of: request.head.path ?? "")
        let method = request.method
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        // parts[0] == "" for an absolute path
        guard parts.count >= 2, parts[0].isEmpty else { return .text(.badRequest, "the lab serves absolute paths under /lab/") }
        if path == "/" || path == "/lab" { return redirect("/lab/") }
        guard parts[1] == "lab" else { return .text(.notFound, "not found: the lab lives under /lab/ (start at /lab/ or GET /lab/plan.json)") }
        let isRead = method == .get || method == .head
        switch parts.count >= 3 ? parts[2] : "" {
        case "" where parts.count == 3:
            guard isRead else { return methodNotAllowed("GET") }
            return html(LabBrowserPage.html)
        case "plan.json" where parts.count == 3:
            guard isRead else { return methodNotAllowed("GET") }
            let run = query["run"] ?? LabRunStore.newRunID()
            guard LabRunStore.isValidRunID(run) else { return .text(.badRequest, "run must be 1–40 characters of A-Z a-z 0-9 _ -") }
            runs.open(run: run)
            return json(LabPlanBuilder.plan(run: run))
        case "runs.json" where parts.count == 3:
            guard isRead else { return methodNotAllowed("GET") }
            return json(runs.runIDs().map { ["run": $0, "results": "/lab/runs/\($0)/results.json", "report": "/lab/runs/\($0)/"] })
        case "r" where parts.count >= 5:
            let run = parts[3]
            guard LabRunStore.isValidRunID(run) else { return .text(.badRequest, "run must be 1–40 characters of A-Z a-z 0-9 _ -") }
            switch parts[4] {
            case "ready" where parts.count == 6:
                guard isRead else { return methodNotAllowed("GET") }
                return ready(run: run, step: parts[5])
            case "report" where parts.count == 6:
                return report(run: run, step: parts[5], request: request, query: query)
            default:
                guard let scenario = LabScenarioCatalog.scenario(parts[4]) else {
                    return .text(.notFound, "no scenario \(parts[4].debugDescription) (see /lab/plan.json)")
                }
                let resource = parts[5...].joined(separator: "/")
                guard isRead else { return methodNotAllowed("GET, HEAD") }
                return serve(run: run, scenario: scenario, resource: resource, request: request)
            }
        case "runs" where parts.count >= 4:
            let run = parts[3]
            guard isRead else { return methodNotAllowed("GET") }
            guard LabRunStore.isValidRunID(run), let snapshot = runs.snapshot(run: run) else {
                return .text(.notFound, "no run \(run.debugDescription) in this lab (runs live in memory: GET /lab/plan.json starts one)")
            }
            let results = LabGrader.grade(snapshot)
            if parts.count == 5, parts[4] == "results.json" { return json(results) }
            if parts.count == 5, parts[4].isEmpty { return html(LabReportPage.html(results)) }
            if parts.count == 4 { return redirect("/lab/runs/\(run)/") }
            return .text(.notFound, "not found: /lab/runs/\(run)/ (HTML) or /lab/runs/\(run)/results.json")
        default:
            return .text(.notFound, "not found: start at /lab/ (browser) or GET /lab/plan.json (apps)")
        }
    }

    private func serve(run: String, scenario: LabScenarioCatalog.Scenario, resource: String,
                       request: HTTPServerRequest) -> HTTPServerResponse {
        guard let definition = scenario.resources[resource] else {
            return .text(.notFound, "scenario \(scenario.id) has no resource \(resource.debugDescription)")
        }
        let fields = request.head.headerFields
        let (response, served) = LabResourceResponder.respond(
            run: run, scenario: scenario, resource: resource, definition, request: fields, head: request.method == .head)
        let step = scenario.steps.first { $0.resource == resource }
        let path = request.head.path ?? ""
        let recorded = LabRecordedRequest(
            step: step.map { "\(scenario.id).\($0.name)" } ?? "\(scenario.id)/\(resource)",
            scenario: scenario.id, resource: resource,
            query: path.firstIndex(of: "?").map { String(path[path.index(after: $0)...]) } ?? "",
            at: Date().timeIntervalSince1970,
            availableDictionary: fields[values: LabResourceResponder.availableDictionary],
            dictionaryID: fields[values: HTTPField.Name("Dictionary-ID")!],
            acceptEncoding: fields[values: .acceptEncoding].joined(separator: ", "),
            secFetchDest: fields[HTTPField.Name("Sec-Fetch-Dest")!], served: served)
        runs.record(run: run, recorded, userAgent: fields[.userAgent])
        return response
    }

    private func ready(run: String, step id: String) -> HTTPServerResponse {
        guard let found = Self.step(id), case .probe = found.1.kind else {
            return .text(.notFound, "no probe step \(id.debugDescription) (see /lab/plan.json)")
        }
        let (scenario, step) = found
        let ready = runs.lastRequest(run: run, step: id).map {
            LabGrader.probeReady(step, $0, scenario: scenario.id, run: run)
        } ?? false
        return json(["ready": ready])
    }

    private func report(run: String, step id: String, request: HTTPServerRequest, query: [String: String]) -> HTTPServerResponse {
        guard Self.step(id) != nil else { return .text(.notFound, "no step \(id.debugDescription) (see /lab/plan.json)") }
        var sha: String?
        var error: String?
        switch request.method {
        case .post, .put:
            guard !request.body.isEmpty else {
                return .text(.badRequest, "report body: expected JSON {\"sha256\": \"<64 hex digits>\"} or {\"error\": \"<why>\"}")
            }
            guard let object = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any] else {
                return .text(.badRequest, "report body is not a JSON object: expected {\"sha256\": \"<64 hex digits>\"} or {\"error\": \"<why>\"}")
            }
            sha = object["sha256"] as? String
            error = object["error"] as? String
            if object["sha256"] != nil, sha == nil { return .text(.badRequest, "sha256 must be a string") }
        case .get:
            sha = query["sha256"]
            error = query["error"]
        default:
            return methodNotAllowed("POST, GET")
        }
        if let s = sha, s.utf8.count != 64 || !s.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) || ($0 >= 0x41 && $0 <= 0x46) }) {
            return .text(.badRequest, "sha256 must be 64 hex digits, got \(s.prefix(80).debugDescription)")
        }
        guard sha != nil || error != nil else {
            return .text(.badRequest, "a report names sha256 (what was decoded) or error (why the response was refused)")
        }
        let trimmed = error.map { $0.isEmpty ? "(empty error)" : String($0.prefix(500)) }
        runs.report(run: run, step: id, LabReport(sha256: sha?.lowercased(), error: trimmed, at: Date().timeIntervalSince1970))
        return json(["recorded": true])
    }

    static func step(_ id: String) -> (LabScenarioCatalog.Scenario, LabScenarioCatalog.Step)? {
        guard let dot = id.firstIndex(of: "."), let scenario = LabScenarioCatalog.scenario(String(id[..<dot])) else { return nil }
        let name = id[id.index(after: dot)...]
        guard let step = scenario.steps.first(where: { $0.name == name }) else { return nil }
        return (scenario, step)
    }

    /// Query parameters (percent-decoded, `+` as space; the first of a repeated name wins).
    static func query(of path: String) -> [String: String] {
        guard let q = path.firstIndex(of: "?") else { return [:] }
        var out: [String: String] = [:]
        for pair in path[path.index(after: q)...].split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ s: Substring) -> String {
                let spaced = s.replacingOccurrences(of: "+", with: " ")
                return spaced.removingPercentEncoding ?? spaced
            }
            let key = decode(kv[0])
            if out[key] == nil { out[key] = kv.count > 1 ? decode(kv[1]) : "" }
        }
        return out
    }

    private func json(_ value: some Encodable) -> HTTPServerResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields[.cacheControl] = "no-store"
        return HTTPServerResponse(status: .ok, headerFields: fields, body: .bytes(Array(data) + [0x0A]))
    }

    private func html(_ text: String) -> HTTPServerResponse {
        var fields = HTTPFields()
        fields[.contentType] = "text/html; charset=utf-8"
        fields[.cacheControl] = "no-store"
        return HTTPServerResponse(status: .ok, headerFields: fields, body: .bytes(Array(text.utf8)))
    }

    private func redirect(_ location: String) -> HTTPServerResponse {
        var fields = HTTPFields()
        fields[.location] = location
        return .text(.found, "see \(location)", headerFields: fields)
    }

    private func methodNotAllowed(_ allow: String) -> HTTPServerResponse {
        var fields = HTTPFields()
        fields[.allow] = allow
        return .text(.methodNotAllowed, "method not allowed here (allowed: \(allow))", headerFields: fields)
    }
}
