import DCServeLab
import DictionaryClient
import DictionaryClientSystemCodecs
import DictionaryCodec
import Foundation
import HTTPTypes

/// `dcserve fetch --lab URL`: runs a lab's plan (`/lab/plan.json`) with ``DictionaryClient`` exactly as
/// `dcserve fetch` would make each request — one fresh in-memory dictionary store for the run, so
/// nothing from earlier runs or the user's store leaks in — reports what it decoded, and returns the
/// lab's graded results. A value used by one command; not for concurrent use.
struct LabPlanRunner {
    /// `http(s)://HOST:PORT` of the lab (any path is ignored).
    let origin: String
    let transport: any FetchTransport
    let verbose: Bool

    init(labURL: String, transport: any FetchTransport, verbose: Bool) throws {
        guard let target = ClientRequestTarget(url: labURL) else {
            throw CLIError("--lab \(labURL.debugDescription): expected http://HOST:PORT or https://HOST:PORT")
        }
        origin = target.origin
        self.transport = transport
        self.verbose = verbose
    }

    func run() throws -> LabResults {
        let plan: LabPlan = try getJSON("/lab/plan.json")
        log("* lab run \(plan.run): \(plan.steps.count) steps")
        let client = DictionaryClient(store: try ClientDictionaryStore(location: .memory), decoders: .systemLibraries)
        for step in plan.steps {
            switch step.kind {
            case "wait":
                log("* \(step.id): wait \(step.seconds ?? 0) s")
                Thread.sleep(forTimeInterval: min(max(step.seconds ?? 0, 0), 60))
            case "probe":
                let tries = min(max(step.maxTries ?? 1, 1), 200)
                for i in 0..<tries {
                    let separator = step.url.contains("?") ? "&" : "?"
                    _ = try? exchange(step.url + separator + "try=\(i)", destination: step.destination, client: client)
                    struct Ready: Decodable { var ready: Bool }
                    let ready: Ready = try getJSON(step.readyURL ?? "")
                    if ready.ready { break }
                    Thread.sleep(forTimeInterval: Double(min(max(step.intervalMilliseconds ?? 250, 0), 5000)) / 1000)
                }
            case "fetch", "page":
                let destination = step.kind == "page" ? "document" : step.destination
                do {
                    let processed = try exchange(step.url, destination: destination, client: client)
                    if step.report { try report(plan, step, ["sha256": SHA256.hash(processed.body).hex]) }
                    if step.followLinks {
                        for link in processed.dictionaryLinks.prefix(FetchCommand.maxLinkFetches) {
                            do { _ = try exchange(link.pathAndQuery, destination: "", client: client) }
                            catch { log("* \(step.id): linked dictionary \(link): \(error)") }
                        }
                    }
                } catch let error as DictionaryClientError {
                    log("* \(step.id): response dropped: \(error)")
                    if step.report { try report(plan, step, ["error": error.description]) }
                }
            default:
                throw CLIError("the lab's plan has a step of unknown kind \(step.kind.debugDescription) (\(step.id)); update dcserve")
            }
        }
        return try getJSON(plan.resultsURL)
    }

    /// One request through the dictionary client; throws ``DictionaryClientError`` when the client
    /// drops the response, `CLIError` on a transport failure.
    private func exchange(_ path: String, destination: String, client: DictionaryClient) throws -> ProcessedResponse {
        let prepared = try client.prepare(url: origin + path, destination: destination)
        if verbose {
            log("> GET \(prepared.target.pathAndQuery) (destination \(destination.debugDescription))")
            for field in prepared.fields { log(">   \(field.name.rawName): \(field.value)") }
        }
        let response = try transport.get(prepared.target, fields: prepared.fields)
        let processed = try client.process(ClientResponse(status: response.status, fields: response.fields, body: response.body), for: prepared)
        if verbose {
            let codings = processed.contentCodings.isEmpty ? "identity" : processed.contentCodings.joined(separator: ", ")
            log("< \(response.status) \(codings), \(response.body.count) → \(processed.body.count) bytes"
                + (processed.registration.map { " registration: \($0)" } ?? ""))
        }
        return processed
    }

    private func report(_ plan: LabPlan, _ step: LabStep, _ values: [String: String]) throws {
        var components = URLComponents()
        components.queryItems = values.map { URLQueryItem(name: $0.key, value: $0.value) }
        // URLComponents leaves "+" alone; the lab reads "+" as a space.
        let query = (components.percentEncodedQuery ?? "").replacingOccurrences(of: "+", with: "%2B")
        let path = plan.reportURL.replacingOccurrences(of: "{step}", with: step.id) + "?" + query
        let response = try plainGet(path)
        guard response.status == 200 else {
            throw CLIError("the lab refused the report for \(step.id): \(response.status) \(String(decoding: response.body, as: UTF8.self))")
        }
    }

    private func getJSON<T: Decodable>(_ path: String) throws -> T {
        let response = try plainGet(path)
        guard response.status == 200 else {
            throw CLIError("\(origin)\(path): \(response.status) \(String(decoding: response.body.prefix(300), as: UTF8.self))")
        }
        do { return try JSONDecoder().decode(T.self, from: Data(response.body)) }
        catch { throw CLIError("\(origin)\(path): not the lab's JSON (is this a dcserve lab?): \(error)") }
    }

    private func plainGet(_ path: String) throws -> FetchHTTPExchange.Response {
        guard let target = ClientRequestTarget(url: origin + path) else { throw CLIError("bad lab URL \(origin)\(path)") }
        var fields = HTTPFields()
        fields[.accept] = "application/json"
        return try transport.get(target, fields: fields)
    }

    private func log(_ line: String) {
        if verbose { FileHandle.standardError.write(Data((line + "\n").utf8)) }
    }

    /// The graded table, one line per scenario, then failures indented under it.
    static func table(_ results: LabResults) -> String {
        let width = max(12, results.scenarios.map(\.id.count).max() ?? 0)
        var out = "dcserve lab run \(results.run)\n"
        for s in results.scenarios {
            out += s.id.padding(toLength: width, withPad: " ", startingAt: 0) + "  "
                + s.status.uppercased().padding(toLength: 8, withPad: " ", startingAt: 0) + "  \(s.title) (\(s.rfc))\n"
            for failure in s.failures { out += "    - \(failure)\n" }
        }
        out += "\(results.passed) passed, \(results.failed) failed, \(results.notRun) not run\n"
        return out
    }
}
