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

    @Option(name: .shortAndLong, help: "Write the decoded body to FILE instead of standard output, as it arrives: a regular file is replaced when the body is complete, a device or FIFO (/dev/null) is written through, - is standard output.")
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
        // No -o: the body goes to standard output, unless --json prints the report there instead.
        let output: CLIOutputFile? = try self.output.map { try CLIOutputFile($0) } ?? (json ? nil : CLIOutputFile("-"))
        let main: FetchOutcome
        do {
            main = try exchange(url, destination: dest, client: client, transport: transport, extra: extra, output: output,
                                report: &report.main)
            try output?.commit()
        } catch {
            output?.abandon()
            throw error
        }
        report.skippedLinks = main.skippedLinks.map { .init(link: $0.link, reason: $0.reason) }
        if !noLinks {
            var links = main.dictionaryLinks
            if links.count > Self.maxLinkFetches {
                for link in links[Self.maxLinkFetches...] {
                    let reason = "more than \(Self.maxLinkFetches) links in one response"
                    report.skippedLinks.append(.init(link: link.description, reason: reason))
                    if verbose { log("* Link \(link) skipped: \(reason)") }
                }
                links = Array(links.prefix(Self.maxLinkFetches))
            }
            for link in links {
                var linkReport = FetchReport.Exchange()
                // The user's fields (-H: credentials, cookies) go to the page's own origin only; the
                // client keeps only same-origin links, and this re-checks it.
                let fields = link.origin == main.target.origin ? extra : HTTPFields()
                do {
                    // Linked dictionaries are fetched like fetch() (destination ""), as browsers do.
                    let outcome = try exchange(link.description, destination: "", client: client, transport: transport,
                                               extra: fields, output: nil, isLink: true, report: &linkReport)
                    if let reason = outcome.notRegisteredReason {
                        linkReport.notRegistered = reason
                        if verbose { log("* linked dictionary \(link) not registered: \(reason)") }
                    }
                } catch {
                    linkReport.error = "\(error)"
                    if verbose { log("* linked dictionary \(link) not registered: \(error)") }
                }
                report.links.append(linkReport)
            }
        } else if verbose {
            for link in main.dictionaryLinks { log("* Link \(link) skipped: --no-links") }
        }
        if json {
            FileHandle.standardOutput.write(try CLIJSON.encode(report) + Data("\n".utf8))
        }
    }

    /// What one exchange left for the caller: the response head, the registration, the links.
    private struct FetchOutcome {
        var target: ClientRequestTarget
        var status: Int
        var registration: RegistrationResult?
        /// Same-origin compression-dictionary links, in order, to fetch.
        var dictionaryLinks: [ClientRequestTarget]
        /// Links announced but not to be fetched, with the reason.
        var skippedLinks: [(link: String, reason: String)]

        /// Why the response did not become a dictionary; nil when it did.
        var notRegisteredReason: String? {
            switch registration {
            case .registered?: return nil
            case .rejected(let reason)?: return reason
            case nil: return status == 200 ? "the response carries no Use-As-Dictionary" : "status \(status)"
            }
        }
    }

    /// Sends one GET through the client and the transport, the body decoded as it arrives and written
    /// to `output` (none: only hashed, and kept when it may become a dictionary); fills `report`.
    /// Throws (a `CLIError`) on a transport, decoding or output failure.
    private func exchange(
        _ url: String, destination: String, client: DictionaryClient, transport: any FetchTransport, extra: HTTPFields,
        output: CLIOutputFile?, isLink: Bool = false, report: inout FetchReport.Exchange
    ) throws -> FetchOutcome {
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
        // A linked dictionary's body is only kept to become a dictionary: a larger one stops early.
        let decoder = FetchResponseDecoder(
            dictionary: prepared.dictionary.map { CompressionDictionary(bytes: $0.bytes) }, output: output, maxDecodedBytes: isLink ? DictionaryRegistrar.maximumBodySize : nil)
        var failure: (any Error)?
        var bodyHash: DictionaryHash?
        do {
            try transport.get(prepared.target, fields: prepared.fields, sink: decoder)
            guard decoder.status != nil else { throw CLIError("\(prepared.target): the exchange ended without a response") }
            bodyHash = try decoder.finish()
        } catch { failure = error }
        if let status = decoder.status {
            report.status = status
            report.responseFields = decoder.fields.map { [$0.name.rawName, $0.value] }
            report.wireBytes = decoder.wireBytes
            if verbose {
                log("< HTTP/1.1 \(status) \(decoder.reason)")
                for field in decoder.fields { log("< \(field.name.rawName): \(field.value)") }
            }
        }
        if let failure {
            report.error = "\(failure)"
            if failure is DictionaryClientError { throw CLIError("\(prepared.target): response dropped: \(failure)") }
            throw failure
        }
        let usesDictionary = decoder.codings.contains { ContentCoding(token: $0)?.usesDictionary == true }
        report.decodedBytes = decoder.decodedBytes
        report.contentEncoding = decoder.codings
        report.decodedWith = usesDictionary ? prepared.dictionary?.hash.hex : nil
        report.bodySHA256 = bodyHash?.hex

        // Registration and links: the decoded body (kept only for a Use-As-Dictionary response) with
        // the response's fields, its codings already undone.
        var fields = decoder.fields
        fields[.contentEncoding] = nil
        if decoder.tooLargeForADictionary { fields[.useAsDictionary] = nil }
        let processed: ProcessedResponse
        do {
            processed = try client.process(
                ClientResponse(status: decoder.status!, fields: fields, body: decoder.retained ?? []), for: prepared)
        } catch {
            report.error = "\(error)"
            throw CLIError("\(prepared.target): response dropped: \(error)")
        }
        var registration = processed.registration
        if decoder.tooLargeForADictionary {
            registration = .rejected("dictionary body of \(decoder.decodedBytes) bytes exceeds \(DictionaryRegistrar.maximumBodySize)")
        }
        switch registration {
        case .registered(let entry, let evicted)?:
            report.registered = .init(entry)
            report.evicted = evicted.map { .init($0) }
        case .rejected(let reason)?: report.registrationRejected = reason
        case nil: break
        }
        report.links = processed.dictionaryLinks.map(\.description)
        let skipped = Self.skippedLinks(decoder.fields, page: prepared.target, kept: processed.dictionaryLinks)
        if verbose {
            let codings = decoder.codings.isEmpty ? "identity" : decoder.codings.joined(separator: ", ")
            log("* \(codings): \(decoder.wireBytes) wire bytes → \(decoder.decodedBytes) decoded bytes"
                + (usesDictionary ? prepared.dictionary.map { " (dictionary \($0.hash.hex))" } ?? "" : ""))
            switch registration {
            case .registered(let entry, let evicted)?:
                log("* registered dictionary \(entry.hashHex) match=\(entry.match.debugDescription)"
                    + (entry.matchDestinations.isEmpty ? "" : " match-dest=\(entry.matchDestinations)")
                    + (entry.id.map { " id=\($0.debugDescription)" } ?? "")
                    + " until \(CLIJSON.timestamp(entry.expiresAt)) (\(entry.size) bytes)")
                for gone in evicted { log("* evicted dictionary \(gone.hashHex) match=\(gone.match.debugDescription)") }
            case .rejected(let reason)?: log("* not registered as a dictionary: \(reason)")
            case nil: break
            }
            for link in processed.dictionaryLinks { log("* Link: compression dictionary \(link)") }
            for (link, reason) in skipped { log("* Link \(link) skipped: \(reason)") }
        }
        return FetchOutcome(target: prepared.target, status: decoder.status!, registration: registration,
                            dictionaryLinks: processed.dictionaryLinks, skippedLinks: skipped)
    }

    /// The compression-dictionary links in `fields` that the client did not keep, with the reason.
    static func skippedLinks(
        _ fields: HTTPFields, page: ClientRequestTarget, kept: [ClientRequestTarget]
    ) -> [(link: String, reason: String)] {
        var skipped: [(link: String, reason: String)] = []
        for reference in CompressionDictionaryLink.references(in: fields[values: HTTPField.Name("Link")!]) {
            guard let target = page.resolve(reference) else {
                skipped.append((reference, "not an http(s) URL"))
                continue
            }
            if kept.contains(target) { continue }
            if !page.isSecureContext {
                skipped.append((target.description, "\(page.origin) is not a secure context (HTTPS or loopback only)"))
            } else if target.origin != page.origin {
                skipped.append((target.description, "another origin than \(page.origin); dictionaries come from the page's own origin"))
            }
        }
        return skipped
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
            FileHandle.standardOutput.write(try CLIJSON.encode(results) + Data("\n".utf8))
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
        /// Why a linked dictionary's response did not become a dictionary.
        var notRegistered: String?
        var error: String?
    }
    struct SkippedLink: Encodable {
        var link: String
        var reason: String
    }
    var url: String
    var store: String
    var partition: String
    var destination: String
    var main = Exchange()
    var links: [Exchange] = []
    /// Links of the main response not fetched, with the reason.
    var skippedLinks: [SkippedLink] = []
}
