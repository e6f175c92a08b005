@testable import DCServeLab
import Foundation
import HTTPServer
import HTTPTypes

// Mode `lab`: both sides of `dcserve lab`. The JSON plan a client downloads from a lab it does not
// control (LabPlan, decoded by `dcserve fetch --lab`), and the lab server's answer to an arbitrary
// request (LabHandler: path segments, query percent-decoding, run ids, report steps and bodies).
//
// Input: a first byte < 0x80 → the input is a plan document; otherwise `method` LF `path` LF `body`
// (a request to the lab).
//
// Invariants: a plan that decodes encodes and decodes to an equal plan; the lab answers every request
// exactly once, synchronously, never with a 5xx; its run store stays bounded (LabRunStore's limits).

let labHandler = LabHandler()

func fuzzLab(_ bytes: [UInt8]) {
    guard let first = bytes.first else { return }
    if first < 0x80 {
        guard let plan = try? JSONDecoder().decode(LabPlan.self, from: Data(bytes)) else { return }
        guard let encoded = try? JSONEncoder().encode(plan) else { preconditionFailure("a decoded plan does not encode") }
        let again = try? JSONDecoder().decode(LabPlan.self, from: encoded)
        precondition(again == plan, "plan does not survive a round trip")
        return
    }
    let parts = bytes.dropFirst().split(separator: 0x0A, maxSplits: 2, omittingEmptySubsequences: false)
    let methodText = String(decoding: parts[0], as: UTF8.self)
    let method = HTTPRequest.Method(methodText) ?? .get
    let path = parts.count > 1 ? String(decoding: parts[1], as: UTF8.self) : "/lab/"
    let body = parts.count > 2 ? Array(parts[2]) : []
    let head = HTTPRequest(method: method, scheme: nil, authority: "lab.example", path: path)
    let request = HTTPServerRequest(head: head, body: body)
    let answers = LabAnswers()
    labHandler.handle(request) { response in answers.statuses.append(response.head.status) }
    precondition(answers.statuses.count == 1, "the lab answered \(answers.statuses.count) times")
    precondition(answers.statuses[0].code < 500, "the lab answered \(answers.statuses[0]) to \(methodText) \(path)")
    precondition(labHandler.runs.runIDs().count <= labHandler.runs.maxRuns)
}

/// The statuses a handler answered with; filled and read on the fuzzing thread only.
final class LabAnswers: @unchecked Sendable {
    var statuses: [HTTPResponse.Status] = []
}
