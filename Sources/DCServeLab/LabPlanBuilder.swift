/// Builds the plan of one run from ``LabScenarioCatalog``. Pure; thread-safe.
enum LabPlanBuilder {
    static let probeMaxTries = 40
    static let probeIntervalMilliseconds = 250

    static func stepID(scenario: String?, name: String) -> String {
        scenario.map { "\($0).\(name)" } ?? name
    }

    static func resourceURL(run: String, scenario: String, resource: String) -> String {
        "/lab/r/\(run)/\(scenario)/\(resource)"
    }

    static func plan(run: String) -> LabPlan {
        let scenarios = LabScenarioCatalog.scenarios.map {
            LabScenarioSummary(id: $0.id, title: $0.title, rfc: $0.rfc, checks: $0.checks)
        }
        let steps = LabScenarioCatalog.orderedSteps().map { scenario, step -> LabStep in
            let id = stepID(scenario: scenario?.id, name: step.name)
            let url = scenario.map { resourceURL(run: run, scenario: $0.id, resource: step.resource) } ?? ""
            switch step.kind {
            case .fetch:
                return LabStep(id: id, scenario: scenario?.id, kind: "fetch", url: url, destination: step.destination,
                               report: step.report, expect: step.expect)
            case .page:
                return LabStep(id: id, scenario: scenario?.id, kind: "page", url: url, destination: "document",
                               followLinks: true, expect: step.expect)
            case .probe:
                return LabStep(id: id, scenario: scenario?.id, kind: "probe", url: url, destination: step.destination,
                               readyURL: "/lab/r/\(run)/ready/\(id)", maxTries: probeMaxTries,
                               intervalMilliseconds: probeIntervalMilliseconds, expect: step.expect)
            case .wait(let seconds):
                return LabStep(id: id, scenario: nil, kind: "wait", method: "", seconds: seconds, expect: step.expect)
            }
        }
        return LabPlan(run: run, reportURL: "/lab/r/\(run)/report/{step}", resultsURL: "/lab/runs/\(run)/results.json",
                       reportPageURL: "/lab/runs/\(run)/", scenarios: scenarios, steps: steps)
    }
}
