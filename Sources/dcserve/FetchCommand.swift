import ArgumentParser
import DictionaryClient
import DictionaryClientSystemCodecs
import DictionaryCodec
import Foundation
import HTTPTypes

/// `dcserve fetch URL`: a curl-like GET through ``DictionaryClient``. Keeps dictionaries between runs
/// in `--store`, names the best one in `Available-Dictionary`, decodes dcb/dcz (and br/zstd/gzip),
/// registers `Use-As-Dictionary` responses and fetches `Link: rel="compression-dictionary"` targets.
/// Exits non-zero with a message when a response cannot be decoded with the dictionary named.
struct FetchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "GET a URL as an RFC 9842 client: advertise stored dictionaries, decode dcb/dcz, register new dictionaries."
    )

    @Argument(help: "An absolute http:// or https:// URL. Dictionaries are used over HTTPS, or plain HTTP to loopback.")
    var url: String

    @Option(help: "Directory of the dictionary store kept between runs (default: $XDG_CACHE_HOME/dcserve/client or ~/.cache/dcserve/client).")
    var store: String?

    @Option(help: "Fetch destination compared with match-dest (\"\" for fetch()/XHR, document, script, style, …).")
    var dest: String = ""

    @Option(help: "Partition of the store (e.g. the signed-in account); dictionaries never cross partitions.")
    var partition: String = ""

    @Option(name: .customShort("H"), help: "Extra request field, \"Name: value\" (repeatable).")
    var header: [String] = []

    @Option(name: .shortAndLong, help: "Write the decoded body to FILE (atomically) instead of standard output.")
    var output: String?

    @Option(help: "PEM file of CA certificates to verify HTTPS servers with (default: the system store).")
    var cacert: String?

    enum Transport: String, ExpressibleByArgument, CaseIterable {
        case eventloop, socket
    }

    @Option(help: "HTTP client: eventloop (dcserve's HTTPClient, default) or socket (a minimal blocking client).")
    var transport: Transport = .eventloop

    @Option(help: "Seconds to wait for connecting and for each read.")
    var timeout: Int = 30

    @Flag(name: .shortAndLong, help: "Describe the exchange on standard error: fields sent and received, the dictionary named and why, wire and decoded bytes, dictionaries registered.")
    var verbose = false

    @Flag(help: "Print a JSON report on standard output (the body goes to -o FILE, or is not printed).")
    var json = false

    @Flag(help: "Do not fetch dictionaries announced with Link: rel=\"compression-dictionary\".")
    var noLinks = false

    @Flag(help: "URL is a `dcserve lab` (http://HOST:PORT): run its whole plan with a fresh in-memory store, print the graded table; exit 0 only when every scenario passed.")
    var lab = false

    /// At most this many linked dictionaries are fetched per run.
    static let maxLinkFetches = 4

    /// Ends the process with `_exit` once the outcome is written: the event loop's Dispatch threads may
    /// still be closing the upstream connection, and `exit()`'s teardown (atexit handlers, static
    /// destructors) racing with them crashed one run in several hundred under load, after the message.
    func run() throws {
        do {
            try perform()
        } catch {
            FileHandle.standardError.write(Data((DCServeCommand.fullMessage(for: error) + "\n").utf8))
            _exit(DCServeCommand.exitCode(for: error).rawValue)
        }
        _exit(0)  // everything was written with FileHandle (unbuffered)
    }

    private func perform() throws {
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
        if lab { return try performLab() }
        var extra = HTTPFields()
        for line in header {
            guard let colon = line.firstIndex(of: ":"), let name = HTTPField.Name(String(line[..<colon]).trimmingCharacters(in: .whitespaces)) else {
                throw ValidationError("-H \(line.debugDescription): expected \"Name: value\"")
            }
            extra.append(HTTPField(name: name, value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        let directory = store ?? Self.defaultStoreDirectory()
        let client: DictionaryClient
        do {
            client = DictionaryClient(store: try ClientDictionaryStore(location: .directory(directory)), decoders: .systemLibraries)
        } catch { throw CLIError("cannot open the dictionary store: \(error)") }
        client.store.removeExpired(now: Date())
        let transport: any FetchTransport = switch self.transport {
        case .eventloop: HTTPClientFetchTransport(caFile: cacert, timeoutSeconds: timeout)
        case .socket: FetchHTTPExchange(caFile: cacert, timeoutSeconds: timeout)
        }

        var report = FetchReport(url: url, store: directory, partition: partition, destination: dest)
        let main = try exchange(url, destination: dest, client: client, transport: transport, extra: extra, report: &report.main)
        if !noLinks {
            for link in main.dictionaryLinks.prefix(Self.maxLinkFetches) {
                var linkReport = FetchReport.Exchange()
                do {
                    // Linked dictionaries are fetched like fetch() (destination ""), as browsers do.
                    _ = try exchange(link.description, destination: "", client: client, transport: transport,
                                     extra: HTTPFields(), report: &linkReport)
                } catch {
                    linkReport.error = "\(error)"
                    if verbose { log("* linked dictionary \(link): \(error)") }
                }
                report.links.append(linkReport)
            }
        }
        if let output {
            do { try AtomicOutputFile.write(main.body, to: output) }
            catch { throw CLIError("cannot write \(output): \(error)") }
        } else if !json {
            FileHandle.standardOutput.write(Data(main.body))
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            FileHandle.standardOutput.write(try encoder.encode(report) + Data("\n".utf8))
        }
    }

    /// Sends one GET through the client and the transport; fills `report`. Throws (a `CLIError`) on a
    /// transport or decoding failure.
    private func exchange(
        _ url: String, destination: String, client: DictionaryClient, transport: any FetchTransport, extra: HTTPFields,
        report: inout FetchReport.Exchange
    ) throws -> ProcessedResponse {
        let prepared: PreparedDictionaryRequest
        do { prepared = try client.prepare(url: url, destination: destination, partition: partition, fields: extra) }
        catch { throw CLIError("\(error)") }
        report.url = prepared.target.description
        report.requestFields = prepared.fields.map { [$0.name.rawName, $0.value] }
        report.dictionary = prepared.chosen.map { .init($0) }
        report.reason = prepared.reason
        if verbose {
            log("> GET \(prepared.target.pathAndQuery) HTTP/1.1")
            log("> Host: \(prepared.target.authority)")
            for field in prepared.fields { log("> \(field.name.rawName): \(field.value)") }
            log("* dictionary: \(prepared.reason)")
        }
        let response = try transport.get(prepared.target, fields: prepared.fields)
        report.status = response.status
        report.responseFields = response.fields.map { [$0.name.rawName, $0.value] }
        report.wireBytes = response.body.count
        if verbose {
            log("< HTTP/1.1 \(response.status) \(response.reason)")
            for field in response.fields { log("< \(field.name.rawName): \(field.value)") }
        }
        let processed: ProcessedResponse
        do {
            processed = try client.process(ClientResponse(status: response.status, fields: response.fields, body: response.body), for: prepared)
        } catch {
            report.error = "\(error)"
            throw CLIError("\(prepared.target): response dropped: \(error)")
        }
        report.decodedBytes = processed.body.count
        report.contentEncoding = processed.contentCodings
        report.decodedWith = processed.decodedWith?.hex
        report.bodySHA256 = SHA256.hash(processed.body).hex
        switch processed.registration {
        case .registered(let entry, let evicted)?:
            report.registered = .init(entry)
            report.evicted = evicted.map { .init($0) }
        case .rejected(let reason)?: report.registrationRejected = reason
        case nil: break
        }
        report.links = processed.dictionaryLinks.map(\.description)
        if verbose {
            let codings = processed.contentCodings.isEmpty ? "identity" : processed.contentCodings.joined(separator: ", ")
            log("* \(codings): \(response.body.count) wire bytes → \(processed.body.count) decoded bytes"
                + (processed.decodedWith.map { " (dictionary \($0.hex))" } ?? ""))
            switch processed.registration {
            case .registered(let entry, let evicted)?:
                log("* registered dictionary \(entry.hashHex) match=\(entry.match.debugDescription)"
                    + (entry.matchDestinations.isEmpty ? "" : " match-dest=\(entry.matchDestinations)")
                    + (entry.id.map { " id=\($0.debugDescription)" } ?? "") + " until \(entry.expiresAt) (\(entry.size) bytes)")
                for gone in evicted { log("* evicted dictionary \(gone.hashHex) match=\(gone.match.debugDescription)") }
            case .rejected(let reason)?: log("* not registered as a dictionary: \(reason)")
            case nil: break
            }
            for link in processed.dictionaryLinks { log("* Link: compression dictionary \(link)") }
        }
        return processed
    }

    private func log(_ line: String) { FileHandle.standardError.write(Data((line + "\n").utf8)) }

    /// `--lab`: runs the lab's plan; prints the graded table (or the results JSON with `--json`).
    private func performLab() throws {
        let transport: any FetchTransport = switch self.transport {
        case .eventloop: HTTPClientFetchTransport(caFile: cacert, timeoutSeconds: timeout)
        case .socket: FetchHTTPExchange(caFile: cacert, timeoutSeconds: timeout)
        }
        let results = try LabPlanRunner(labURL: url, transport: transport, verbose: verbose).run()
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            FileHandle.standardOutput.write(try encoder.encode(results) + Data("\n".utf8))
        } else {
            FileHandle.standardOutput.write(Data(LabPlanRunner.table(results).utf8))
        }
        guard results.passed == results.scenarios.count else {
            throw CLIError("lab: \(results.failed) scenario(s) failed, \(results.notRun) not run (report: \(url.hasSuffix("/") ? String(url.dropLast()) : url)/lab/runs/\(results.run)/)")
        }
    }

    static func defaultStoreDirectory() -> String {
        let env = ProcessInfo.processInfo.environment
        if let xdg = env["XDG_CACHE_HOME"], xdg.hasPrefix("/") { return xdg + "/dcserve/client" }
        let home = env["HOME"] ?? NSHomeDirectory()
        return home + "/.cache/dcserve/client"
    }
}

/// The `--json` report of `dcserve fetch`.
struct FetchReport: Encodable {
    struct Dictionary: Encodable {
        var hash: String, match: String, matchDest: [String], id: String?, size: Int, expires: Date
        init(_ e: StoredDictionary) {
            hash = e.hashHex; match = e.match; matchDest = e.matchDestinations; id = e.id; size = e.size; expires = e.expiresAt
        }
    }
    struct Exchange: Encodable {
        var url = ""
        var requestFields: [[String]] = []
        var dictionary: Dictionary?
        var reason = ""
        var status: Int?
        var responseFields: [[String]] = []
        var contentEncoding: [String] = []
        var decodedWith: String?
        var wireBytes: Int?
        var decodedBytes: Int?
        var bodySHA256: String?
        var registered: Dictionary?
        var registrationRejected: String?
        var evicted: [Dictionary] = []
        var links: [String] = []
        var error: String?
    }
    var url: String
    var store: String
    var partition: String
    var destination: String
    var main = Exchange()
    var links: [Exchange] = []
}
