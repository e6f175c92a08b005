/// The JSON plan an app (or `dcserve fetch --lab`, or the browser page) runs: `GET /lab/plan.json`.
/// Plain Codable values; thread-safe. Field names are the wire contract documented in README
/// "Testing your client" — add fields, never rename them.
public struct LabPlan: Codable, Sendable, Equatable {
    /// Format version of this document (1).
    public var version: Int
    /// The run these URLs belong to; every scenario URL contains it (`/lab/r/<run>/…`).
    public var run: String
    /// Where to POST (or GET with `?sha256=` / `?error=`) what a `report` step decoded; `{step}` is
    /// replaced by the step's `id`.
    public var reportURL: String
    /// The graded results of this run (JSON) and the same as an HTML page.
    public var resultsURL: String
    public var reportPageURL: String
    public var scenarios: [LabScenarioSummary]
    /// Run in this order, one at a time.
    public var steps: [LabStep]

    public init(version: Int = 1, run: String, reportURL: String, resultsURL: String, reportPageURL: String,
                scenarios: [LabScenarioSummary], steps: [LabStep]) {
        self.version = version
        self.run = run
        self.reportURL = reportURL
        self.resultsURL = resultsURL
        self.reportPageURL = reportPageURL
        self.scenarios = scenarios
        self.steps = steps
    }
}

/// One scenario as the plan and the results list it.
public struct LabScenarioSummary: Codable, Sendable, Equatable {
    public var id: String
    public var title: String
    /// The RFC 9842 (or RFC 9111) section the scenario checks.
    public var rfc: String
    /// What a conforming client does, in one or two sentences.
    public var checks: String
}

/// One step of the plan.
///
/// Kinds:
/// - `fetch`: GET `url` as a request of Fetch destination `destination` (`""` = fetch()/XHR; `script` =
///   a `<script>` load). Decode the response as usual. When `report` is true, report the SHA-256 (hex) of
///   the decoded body to the plan's `reportURL`, or — if the client refused the response — `error`.
/// - `probe`: GET `url` with `?try=N` appended (N = 0, 1, …), then GET `readyURL`
///   (`{"ready": true|false}`); repeat, `intervalMilliseconds` apart, until ready or `maxTries` tries.
///   For clients that store dictionaries asynchronously (browsers); an app that registers at once is
///   ready after one try.
/// - `page`: a navigation to `url` (destination `document`); the client follows
///   `Link: <…>; rel="compression-dictionary"` as it would for a page it shows (`followLinks`).
/// - `wait`: do nothing for `seconds` (lets dictionary lifetimes run out).
public struct LabStep: Codable, Sendable, Equatable {
    public var id: String
    public var scenario: String?
    public var kind: String
    public var method: String
    public var url: String
    public var destination: String
    public var report: Bool
    public var followLinks: Bool
    public var readyURL: String?
    public var maxTries: Int?
    public var intervalMilliseconds: Int?
    public var seconds: Double?
    /// What the lab expects the client to do in this step (human-readable).
    public var expect: String

    public init(id: String, scenario: String?, kind: String, method: String = "GET", url: String = "",
                destination: String = "", report: Bool = false, followLinks: Bool = false, readyURL: String? = nil,
                maxTries: Int? = nil, intervalMilliseconds: Int? = nil, seconds: Double? = nil, expect: String) {
        self.id = id
        self.scenario = scenario
        self.kind = kind
        self.method = method
        self.url = url
        self.destination = destination
        self.report = report
        self.followLinks = followLinks
        self.readyURL = readyURL
        self.maxTries = maxTries
        self.intervalMilliseconds = intervalMilliseconds
        self.seconds = seconds
        self.expect = expect
    }
}

/// `GET /lab/runs/<run>/results.json`: every scenario graded.
public struct LabResults: Codable, Sendable, Equatable {
    public struct Scenario: Codable, Sendable, Equatable {
        public var id: String
        public var title: String
        public var rfc: String
        /// `passed`, `failed` or `not run`.
        public var status: String
        /// One line per unmet expectation: what was expected and what came (empty when passed).
        public var failures: [String]
        /// What the client sent for this scenario's steps (one line per request).
        public var observed: [String]
    }
    public var run: String
    public var passed: Int
    public var failed: Int
    public var notRun: Int
    public var scenarios: [Scenario]
    /// The client's `User-Agent` as last seen in this run.
    public var userAgent: String?
}
