@testable import DCServeLab
import Foundation
import Testing

/// The scenario catalog is self-consistent: every step's resource exists and belongs to one step, every
/// dictionary a check or probe names is served by the scenario, and the plan round-trips as JSON.
@Suite struct LabCatalogTests {
    @Test func everyStepNamesAnExistingResourceOfItsOwn() {
        for scenario in LabScenarioCatalog.scenarios {
            var seen: Set<String> = []
            let dictionaries = Set(LabGrader.dictionaryNames(scenario))
            for step in scenario.steps {
                #expect(scenario.resources[step.resource] != nil, "\(scenario.id).\(step.name): \(step.resource)")
                #expect(seen.insert(step.resource).inserted, "\(scenario.id): \(step.resource) used by two steps")
                if case .probe(let name?) = step.kind { #expect(dictionaries.contains(name)) }
                for check in step.checks {
                    if case .names(let name) = check { #expect(dictionaries.contains(name), "\(scenario.id): \(name)") }
                    if case .fetched(let resource) = check { #expect(scenario.resources[resource] != nil) }
                }
            }
            #expect(!scenario.checks.isEmpty && !scenario.rfc.isEmpty)
        }
    }

    @Test func planListsEveryStepOnceWithRunScopedURLs() throws {
        let plan = LabPlanBuilder.plan(run: "t-1")
        let ids = plan.steps.map(\.id)
        #expect(Set(ids).count == ids.count)
        #expect(plan.steps.count == LabScenarioCatalog.scenarios.reduce(1) { $0 + $1.steps.count })
        for step in plan.steps where step.kind != "wait" { #expect(step.url.hasPrefix("/lab/r/t-1/")) }
        // expired/stale-while-revalidate `use` steps come after the wait.
        let wait = try #require(ids.firstIndex(of: "lifetimes-wait"))
        #expect(ids.firstIndex(of: "expired.use")! > wait && ids.firstIndex(of: "stale-while-revalidate.use")! > wait)
        #expect(ids.firstIndex(of: "expired.probe")! < wait)
        let decoded = try JSONDecoder().decode(LabPlan.self, from: JSONEncoder().encode(plan))
        #expect(decoded == plan)
    }

    @Test func runsHaveTheirOwnDictionaries() {
        #expect(LabGrader.hash(run: "a", scenario: "registration", dictionary: "main")
                != LabGrader.hash(run: "b", scenario: "registration", dictionary: "main"))
        #expect(LabGrader.hash(run: "a", scenario: "registration", dictionary: "main")
                != LabGrader.hash(run: "a", scenario: "expired", dictionary: "main"))
    }
}
