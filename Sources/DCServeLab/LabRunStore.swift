import Foundation
import Locking

/// One request the lab received for a run's scenario resource: what the client sent that the grading
/// looks at. A value; thread-safe.
struct LabRecordedRequest: Sendable {
    /// The step the resource belongs to (`<scenario>.<step>`), or `<scenario>/<resource>` for a
    /// resource no step lists (a Link target).
    var step: String
    var scenario: String
    var resource: String
    var query: String
    /// Seconds since 1970 when the request arrived.
    var at: Double
    /// Every `Available-Dictionary` field line, as received.
    var availableDictionary: [String]
    var dictionaryID: [String]
    var acceptEncoding: String
    var secFetchDest: String?
    /// What the lab answered: `identity`, `dcz (dictionary <hex16>)`, ….
    var served: String
}

/// What the client reported for a `report` step: the SHA-256 (hex) of what it decoded, or why it
/// refused the response.
struct LabReport: Sendable {
    var sha256: String?
    var error: String?
    var at: Double
}

/// Everything recorded for one run, as the grader reads it.
struct LabRunSnapshot: Sendable {
    var id: String
    var requests: [LabRecordedRequest]
    var reports: [String: LabReport]
    var userAgent: String?
}

/// The lab's memory: runs by id, each with its requests and reports. Bounded: at most `maxRuns` runs
/// (the least recently touched is forgotten first) and `maxRequestsPerRun` requests per run (later
/// ones are counted, not kept). In memory only: a restarted lab starts empty (a run's URLs keep
/// working; its history is gone).
///
/// Thread-safety: every method may be called from any thread (one mutex).
final class LabRunStore: Sendable {
    let maxRuns: Int
    let maxRequestsPerRun: Int

    private struct Run {
        var requests: [LabRecordedRequest] = []
        var dropped = 0
        var reports: [String: LabReport] = [:]
        var userAgent: String?
        var touched: UInt64 = 0
    }
    private struct State {
        var runs: [String: Run] = [:]
        var clock: UInt64 = 0
    }
    private let state = Locked(State())

    init(maxRuns: Int = 256, maxRequestsPerRun: Int = 4000) {
        self.maxRuns = maxRuns
        self.maxRequestsPerRun = maxRequestsPerRun
    }

    /// A run id: 1–40 characters of `A-Z a-z 0-9 _ -` (they appear in URL paths and match patterns).
    static func isValidRunID(_ id: some StringProtocol) -> Bool {
        !id.isEmpty && id.utf8.count <= 40 && id.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D || b == 0x5F
        }
    }

    /// A fresh random run id (16 hex digits).
    static func newRunID() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(format: "%016llx", generator.next() as UInt64)
    }

    func record(run: String, _ request: LabRecordedRequest, userAgent: String?) {
        state.withLock { s in
            touch(&s, run)
            if s.runs[run]!.requests.count < maxRequestsPerRun {
                s.runs[run]!.requests.append(request)
            } else {
                s.runs[run]!.dropped += 1
            }
            if let userAgent { s.runs[run]!.userAgent = userAgent }
        }
    }

    func report(run: String, step: String, _ report: LabReport) {
        state.withLock { s in
            touch(&s, run)
            if s.runs[run]!.reports.count < maxRequestsPerRun || s.runs[run]!.reports[step] != nil {
                s.runs[run]!.reports[step] = report
            }
        }
    }

    /// Creates the run if unknown (a plan was fetched for it).
    func open(run: String) {
        state.withLock { s in touch(&s, run) }
    }

    func snapshot(run: String) -> LabRunSnapshot? {
        state.withLock { s in
            guard let r = s.runs[run] else { return nil }
            return LabRunSnapshot(id: run, requests: r.requests, reports: r.reports, userAgent: r.userAgent)
        }
    }

    /// The last request recorded for `step` of `run`.
    func lastRequest(run: String, step: String) -> LabRecordedRequest? {
        state.withLock { s in s.runs[run]?.requests.last { $0.step == step } }
    }

    /// Run ids, most recently touched first.
    func runIDs() -> [String] {
        state.withLock { s in s.runs.sorted { $0.value.touched > $1.value.touched }.map(\.key) }
    }

    private func touch(_ s: inout State, _ run: String) {
        s.clock += 1
        if s.runs[run] == nil {
            if s.runs.count >= maxRuns, let oldest = s.runs.min(by: { $0.value.touched < $1.value.touched })?.key {
                s.runs[oldest] = nil
            }
            s.runs[run] = Run()
        }
        s.runs[run]!.touched = s.clock
    }
}
