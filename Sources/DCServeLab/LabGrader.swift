import DictionaryCodec
import DictionaryTransport
import Foundation

/// Grades a run: every scenario passed, failed (one line per unmet expectation: what was expected and
/// what came) or not run (no request for any of its steps). Pure; thread-safe.
enum LabGrader {
    static func grade(_ run: LabRunSnapshot) -> LabResults {
        var results: [LabResults.Scenario] = []
        for scenario in LabScenarioCatalog.scenarios {
            let prefix = scenario.id + "."
            let mine = run.requests.filter { $0.scenario == scenario.id }
            let observed = mine.map(describe)
            let anyReport = run.reports.keys.contains { $0.hasPrefix(prefix) }
            guard !mine.isEmpty || anyReport else {
                results.append(.init(id: scenario.id, title: scenario.title, rfc: scenario.rfc, status: "not run",
                                     failures: [], observed: []))
                continue
            }
            var failures: [String] = []
            for step in scenario.steps where !step.checks.isEmpty {
                let id = prefix + step.name
                let requests = mine.filter { $0.step == id }
                failures += check(step, id: id, scenario: scenario, requests: requests, all: mine, run: run)
            }
            results.append(.init(id: scenario.id, title: scenario.title, rfc: scenario.rfc,
                                 status: failures.isEmpty ? "passed" : "failed", failures: failures, observed: observed))
        }
        return LabResults(run: run.id, passed: results.count(where: { $0.status == "passed" }),
                          failed: results.count(where: { $0.status == "failed" }),
                          notRun: results.count(where: { $0.status == "not run" }),
                          scenarios: results, userAgent: run.userAgent)
    }

    static func hash(run: String, scenario: String, dictionary: String) -> DictionaryHash {
        SHA256.hash(LabContent.dictionary(run: run, scenario: scenario, name: dictionary))
    }

    /// `:base64:` (the Available-Dictionary spelling) of a dictionary of the run.
    static func fieldValue(_ hash: DictionaryHash) -> String { hash.structuredFieldBinary }

    private static func check(
        _ step: LabScenarioCatalog.Step, id: String, scenario: LabScenarioCatalog.Scenario,
        requests: [LabRecordedRequest], all: [LabRecordedRequest], run: LabRunSnapshot
    ) -> [String] {
        let label = step.name
        // Checks on the report alone do not need a request of this step.
        guard var request = requests.last else {
            return ["\(label): not run (expected: \(step.expect))"]
        }
        if case .probe = step.kind {
            // A probe passes if any try showed what it waits for.
            if let good = requests.last(where: { probeReady(step, $0, scenario: scenario.id, run: run.id) }) { request = good }
        }
        var failures: [String] = []
        for check in step.checks {
            if let message = evaluate(check, request: request, step: step, id: id, scenario: scenario, all: all, run: run) {
                failures.append("\(label): \(message)")
            }
        }
        return failures
    }

    /// True when the recorded request satisfies what a probe step waits for.
    static func probeReady(_ step: LabScenarioCatalog.Step, _ request: LabRecordedRequest, scenario: String, run: String) -> Bool {
        guard case .probe(let dictionary) = step.kind else { return false }
        guard request.availableDictionary.count == 1 else { return false }
        guard let dictionary else { return true }
        return AvailableDictionary.parse(fieldValue: request.availableDictionary[0]).value?.hash
            == hash(run: run, scenario: scenario, dictionary: dictionary)
    }

    private static func evaluate(
        _ check: LabScenarioCatalog.Check, request: LabRecordedRequest, step: LabScenarioCatalog.Step, id: String,
        scenario: LabScenarioCatalog.Scenario, all: [LabRecordedRequest], run: LabRunSnapshot
    ) -> String? {
        let sent = request.availableDictionary.isEmpty ? "none" : request.availableDictionary.joined(separator: " | ")
        switch check {
        case .names(let name):
            let expected = hash(run: run.id, scenario: scenario.id, dictionary: name)
            if request.availableDictionary.count == 1,
               AvailableDictionary.parse(fieldValue: request.availableDictionary[0]).value?.hash == expected { return nil }
            return "expected Available-Dictionary \(fieldValue(expected)) (dictionary \(name)\(describeOthers(except: name, scenario: scenario))), got \(identify(sent, scenario: scenario, run: run.id))"
        case .namesAny:
            if request.availableDictionary.count >= 1 { return nil }
            return "expected an Available-Dictionary, got none"
        case .namesNone:
            if request.availableDictionary.isEmpty { return nil }
            return "expected no Available-Dictionary, got \(identify(sent, scenario: scenario, run: run.id))"
        case .offersDictionaryCodings:
            let codings = tokens(request.acceptEncoding)
            if codings.contains("dcb") || codings.contains("dcz") { return nil }
            return "expected dcb and/or dcz in Accept-Encoding, got \(request.acceptEncoding.debugDescription)"
        case .offersNoDictionaryCodings:
            let codings = tokens(request.acceptEncoding)
            if !codings.contains("dcb") && !codings.contains("dcz") { return nil }
            return "expected no dcb/dcz in Accept-Encoding (no dictionary named), got \(request.acceptEncoding.debugDescription)"
        case .echoesID(let template):
            let expected = template.replacingOccurrences(of: "{run}", with: run.id)
            let got = request.dictionaryID
            if got.count == 1, DictionaryID.parse(fieldValue: got[0]).value?.value == expected { return nil }
            return "expected Dictionary-ID \(DictionaryID(expected)?.fieldValue ?? expected), got \(got.isEmpty ? "none" : got.joined(separator: " | "))"
        case .singleAvailableDictionary:
            if request.availableDictionary.count == 1,
               AvailableDictionary.parse(fieldValue: request.availableDictionary[0]).value != nil { return nil }
            return "expected exactly one Available-Dictionary field with one 32-byte sf-binary, got \(request.availableDictionary.count) field line(s): \(sent)"
        case .decoded(let content):
            let expected = SHA256.hash(LabContent.content(run: run.id, scenario: scenario.id, name: content)).hex
            guard let report = run.reports[id] else {
                return "expected the SHA-256 of the decoded body reported to the report URL, got no report"
            }
            if report.sha256?.lowercased() == expected { return nil }
            if let sha = report.sha256 {
                return "expected decoded SHA-256 \(expected), got \(sha) (served: \(request.served))"
            }
            return "expected decoded SHA-256 \(expected), got an error: \(report.error ?? "(none given)") (served: \(request.served))"
        case .rejected:
            guard let report = run.reports[id] else {
                return "expected the refusal reported (error) to the report URL, got no report"
            }
            if let sha = report.sha256 {
                return "expected the response refused (its header names another dictionary), but the client decoded it and reported SHA-256 \(sha) (served: \(request.served))"
            }
            return nil
        case .fetched(let resource):
            if all.contains(where: { $0.resource == resource }) { return nil }
            return "expected a request for \(resource) (the Link target), got none"
        case .cameAfter(let stepName, let seconds):
            guard let earlier = all.last(where: { $0.step == scenario.id + "." + stepName }) else {
                return "expected step \(stepName) before this one, got no request for it"
            }
            let gap = request.at - earlier.at
            if gap >= seconds { return nil }
            return "expected this request at least \(String(format: "%.1f", seconds)) s after \(stepName) (the plan's wait step), got \(String(format: "%.2f", gap)) s"
        }
    }

    /// Names a received Available-Dictionary value: which of the scenario's dictionaries, or of
    /// another run/scenario.
    private static func identify(_ sent: String, scenario: LabScenarioCatalog.Scenario, run: String) -> String {
        guard sent != "none" else { return "none" }
        guard let value = AvailableDictionary.parse(fieldValue: sent).value else { return "\(sent) (not one valid hash)" }
        for name in dictionaryNames(scenario) where hash(run: run, scenario: scenario.id, dictionary: name) == value.hash {
            return "\(sent) (dictionary \(name))"
        }
        return "\(sent) (not a dictionary of this scenario and run)"
    }

    private static func describeOthers(except name: String, scenario: LabScenarioCatalog.Scenario) -> String {
        let names = dictionaryNames(scenario)
        return names.count > 1 ? " of \(names.joined(separator: ", "))" : ""
    }

    static func dictionaryNames(_ scenario: LabScenarioCatalog.Scenario) -> [String] {
        scenario.resources.values.compactMap { resource -> String? in
            if case .dictionary(let name, _, _) = resource { return name }
            return nil
        }.sorted()
    }

    private static func tokens(_ acceptEncoding: String) -> Set<String> {
        Set(acceptEncoding.split(separator: ",").map {
            $0.prefix { $0 != ";" }.trimmingCharacters(in: .whitespaces).lowercased()
        })
    }

    private static func describe(_ r: LabRecordedRequest) -> String {
        var line = "\(r.step) \(r.resource)\(r.query.isEmpty ? "" : "?" + r.query):"
        line += " Available-Dictionary=" + (r.availableDictionary.isEmpty ? "-" : r.availableDictionary.joined(separator: " | "))
        if !r.dictionaryID.isEmpty { line += " Dictionary-ID=" + r.dictionaryID.joined(separator: " | ") }
        line += " Accept-Encoding=\(r.acceptEncoding.isEmpty ? "-" : r.acceptEncoding)"
        if let dest = r.secFetchDest { line += " Sec-Fetch-Dest=\(dest)" }
        line += " → \(r.served)"
        return line
    }
}
