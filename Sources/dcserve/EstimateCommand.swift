import ArgumentParser
import DCServe
import DCServeEstimate
import Foundation
import Logging

/// `dcserve estimate RECORDING.har`: what dictionary transport would save on a recorded session,
/// from dcserve's own rules, negotiation and codecs (``Estimator``). The rules come from the same
/// quick-mode flags as `serve` (``QuickRuleOptions``) or from `--config FILE`.
struct EstimateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "estimate",
        abstract: "Estimate dictionary transport's savings on a recorded session (HAR 1.2), offline.",
        discussion: """
            Replays the HAR's entries (ordered by startedDateTime) through dcserve itself, started in this \
            process on a loopback port in front of a replay of the recorded responses: once with a simulated \
            RFC 9842 client (one per partition value, honouring Link), once as a client without dictionary \
            transport. Prints per rule and per endpoint group the requests, identity bytes, what dcserve \
            sends without dictionaries, br-11, the bytes with dictionary transport (heads, deltas, dictionary \
            downloads and Link fetches), the hit ratio and why the other responses were not deltas. \
            Bodies missing from the HAR are not replayed and are named; base64 bodies are decoded and named.
            """
    )

    @Argument(help: "The recording (HAR 1.2: browsers' developer tools, Charles, Proxyman, mitmproxy).")
    var recording: String

    @Option(help: "Configuration file (JSON; as for serve). Its rules are used; routes and upstreams are replaced by the replay.")
    var config: String?

    @OptionGroup(title: "Quick mode rules")
    var rules: QuickRuleOptions

    @Option(help: "Accept-Encoding of the simulated client, without dcb/dcz (added when it names a dictionary).")
    var acceptEncoding = "gzip, deflate, br, zstd"

    @Option(help: "Origin to replay (scheme://host[:port]); default: the one with the most entries.")
    var origin: String?

    @Flag(help: "Print the report as JSON.")
    var json = false

    @Option(help: ArgumentHelp("Also write a self-contained HTML report (plot and tables) to FILE.", valueName: "file"))
    var html: String?

    func validate() throws {
        if config == nil && rules.isEmpty {
            throw ValidationError("give --config FILE or at least one --dictionaries / --history-dictionaries PATTERN")
        }
    }

    func makeConfiguration() async throws -> DCServeConfiguration {
        do {
            var c: DCServeConfiguration
            if let config {
                c = try await ConfigurationLoader.load(file: config)
            } else {
                c = try ConfigurationLoader.load(contents: Array(ServeCommand.quickModeDefaults.utf8), file: "quick mode")
            }
            try rules.apply(to: &c)
            try c.validate()
            return c
        } catch let error as ConfigurationError {
            throw CLIError(rules.describe(error, fromFile: config != nil) ?? error.description)
        }
    }

    func run() async throws {
        // The in-process server's and store's log lines go to standard error, warnings and worse only:
        // standard output is the report.
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .warning
            return handler
        }
        let configuration = try await makeConfiguration()
        let archive: HTTPArchive
        do {
            archive = try HTTPArchive.parse(try CLIFile.read(recording))
        } catch let error as HTTPArchiveError {
            throw CLIError("\(recording): \(error)")
        }
        guard !archive.exchanges.isEmpty else { throw CLIError("\(recording): the HAR has no entries") }
        var estimator = Estimator(configuration: configuration)
        estimator.acceptEncoding = acceptEncoding
        estimator.origin = origin
        let report: EstimateReport
        do {
            report = try await estimator.estimate(archive, file: recording)
        } catch let error as ConfigurationError {
            throw CLIError("cannot replay: \(error)")
        }
        guard report.replayed > 0 else {
            throw CLIError("\(recording): nothing to replay (\(report.skipped.count) entries skipped: \(report.skipped.first?.reason ?? "-"))")
        }
        if let html {
            do { try CLIOutputFile.write(Array(EstimateHTMLReport.render(report).utf8), to: html) }
            catch { throw CLIError("cannot write \(html): \(error)") }
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            FileHandle.standardOutput.write(try encoder.encode(report) + Data("\n".utf8))
        } else {
            FileHandle.standardOutput.write(Data(EstimateTextReport.render(report).utf8))
        }
    }
}
