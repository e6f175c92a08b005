import ArgumentParser
import Foundation
import DCServe
import DictionaryTransport
import Logging
import Metrics
import Prometheus

/// `dcserve serve`: the dictionary-compression server, until SIGTERM/SIGINT.
///
/// Three ways to start it: `--config FILE` (the JSON configuration, with `DCSERVE_*` environment
/// overrides), or quick mode for client developers, `--root DIR --dictionaries PATTERN [--store DIR]`
/// (a static site) or `--upstream URL [--dictionaries PATTERN]…` (every request proxied to URL),
/// which need no file. Command-line options override the file. This type only parses flags into a
/// `DCServeConfiguration`; `DCServeServer` assembles and runs the server.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve a directory or proxy an API over HTTP/1.1 with dictionary compression (dcb/dcz).",
        discussion: """
            Start with --config FILE, or in quick mode with --root DIR (a static site) or --upstream URL \
            (every request proxied to URL) and one or more --dictionaries PATTERN \
            (every response whose path matches PATTERN becomes a dictionary with match=PATTERN, and matching \
            resources are compressed against any stored dictionary whose match covers them). \
            Binds 127.0.0.1 unless --host says otherwise. --port 0 picks a free port; the log line \
            'listening on http://HOST:PORT' names it. SIGTERM/SIGINT shut down gracefully.
            """
    )

    @Option(help: "Configuration file (JSON; see Config/dcserve.json). Options given here override it.")
    var config: String?

    @Option(help: "Document root directory (overrides site.root).")
    var root: String?

    @Option(help: ArgumentHelp("Quick mode: proxy every request to this upstream (http://HOST:PORT or https://…); replaces the file's routes.", valueName: "url"))
    var upstream: String?

    @OptionGroup(title: "Quick mode rules")
    var rules: QuickRuleOptions

    @Option(help: "Dictionary store directory (overrides store.path; default dictionaries/), or postgres://USER[:PASSWORD]@HOST:PORT/DB for the shared PostgreSQL store (store.path is then its local cache).")
    var store: String?

    @Option(help: "TCP port; 0 picks a free one (overrides server.port; default 8080).")
    var port: UInt16?

    @Option(help: "Admin (metrics, health) port; 0 picks a free one (overrides admin.port; default 9090 with --config, no admin listener in quick mode unless this is given).")
    var adminPort: UInt16?

    @Flag(help: "Do not start the admin listener (overrides admin.enabled).")
    var noAdmin = false

    @Option(help: "Address to bind (IPv4 or IPv6 literal). Repeat for several.")
    var host: [String] = []

    @Option(help: "Seconds to let in-flight requests finish on SIGTERM/SIGINT before closing connections (overrides server.shutdownDeadlineSeconds).")
    var shutdownTimeout: Double?

    @Option(help: "Seconds a request head may take to arrive, slowloris defence (overrides server.headerTimeoutSeconds; default 10).")
    var headerTimeout: Double?

    @Option(help: "Seconds a request body may take to arrive (overrides server.bodyTimeoutSeconds; default 30).")
    var bodyTimeout: Double?

    @Option(help: "Seconds a response may go without write progress before the client is dropped (overrides server.writeTimeoutSeconds; default 30).")
    var writeTimeout: Double?

    @Option(help: "Seconds an idle keep-alive connection stays open (overrides server.idleTimeoutSeconds).")
    var idleTimeout: Double?

    @Option(help: "Most concurrent connections; more get 503 and are closed (overrides server.maxConnections).")
    var maxConnections: Int?

    @Option(help: "Most requests per keep-alive connection (overrides server.maxRequestsPerConnection; default 10000).")
    var maxRequestsPerConnection: Int?

    @Option(help: "Largest request body in bytes (overrides server.maxBodyBytes; default 1048576).")
    var maxBodyBytes: Int?

    @Option(help: "Event loops serving connections (overrides server.eventLoops; default: one per core).")
    var eventLoops: Int?

    @Flag(inversion: .prefixedNo, help: "Add DCServe-Decision (why this coding) to every response (overrides server.decisionHeader; default: on in quick mode, off with --config).")
    var decisionHeader: Bool?

    @Flag(inversion: .prefixedNo, help: "One log line per request (logger dcserve.access, level info, written in batches at least every 100 ms; overrides server.accessLog).")
    var accessLog: Bool?

    // TLS (quick mode or overriding tls.* of the file):
    @Option(name: .customLong("tls-cert"), help: ArgumentHelp("PEM certificate chain for the HTTPS listener (overrides tls.certificate).", valueName: "file"))
    var tlsCertificate: String?

    @Option(name: .customLong("tls-key"), help: ArgumentHelp("PEM private key for the HTTPS listener (overrides tls.key).", valueName: "file"))
    var tlsKey: String?

    @Option(name: .customLong("tls-port"), help: "HTTPS port; 0 picks a free one (overrides tls.port; default 8443).")
    var tlsPort: UInt16?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical (overrides server.logLevel; default info).")
    var logLevel: String?

    func validate() throws {
        if config == nil && root == nil && upstream == nil {
            throw ValidationError("give --config FILE, or for quick mode --root DIR or --upstream URL (with --dictionaries PATTERN)")
        }
        if upstream != nil && root != nil {
            throw ValidationError("--upstream sends every request to the upstream, so --root would serve nothing: give one of them (or routes in --config)")
        }
    }

    /// The application configuration: the file (if any), then the command line on top.
    func makeApplicationConfiguration() async throws -> DCServeConfiguration {
        var c: DCServeConfiguration
        if let config {
            c = try await ConfigurationLoader.load(file: config)
        } else {
            // Quick mode's own defaults, then the DCSERVE_* environment as for a file (a container's
            // DCSERVE_SERVER_HOST=0.0.0.0 must count here too), then the flags below.
            c = try ConfigurationLoader.load(contents: Array(Self.quickModeDefaults.utf8), file: "quick mode")
            if adminPort != nil { c.admin.enabled = true }
        }
        if let root { c.site.root = root }
        if let store {
            if store.hasPrefix("postgres://") || store.hasPrefix("postgresql://") {  // shared store
                c.store.kind = .postgres
                c.store.postgres.url = store
            } else {
                c.store.path = store
            }
        }
        if let port { c.server.port = Int(port) }
        if let adminPort { c.admin.port = Int(adminPort) }
        if noAdmin { c.admin.enabled = false }
        if let host = host.first { c.server.host = host }
        if let idleTimeout { c.server.idleTimeoutSeconds = idleTimeout }
        if let shutdownTimeout { c.server.shutdownDeadlineSeconds = shutdownTimeout }
        if let headerTimeout { c.server.headerTimeoutSeconds = headerTimeout }
        if let bodyTimeout { c.server.bodyTimeoutSeconds = bodyTimeout }
        if let writeTimeout { c.server.writeTimeoutSeconds = writeTimeout }
        if let maxConnections { c.server.maxConnections = maxConnections }
        if let maxRequestsPerConnection { c.server.maxRequestsPerConnection = maxRequestsPerConnection }
        if let maxBodyBytes { c.server.maxBodyBytes = maxBodyBytes }
        if let eventLoops { c.server.eventLoops = eventLoops }
        if let logLevel { c.server.logLevel = logLevel }
        if let accessLog { c.server.accessLog = accessLog }
        if let decisionHeader { c.server.decisionHeader = decisionHeader }
        if let tlsCertificate { c.tls.certificate = tlsCertificate }
        if let tlsKey { c.tls.key = tlsKey }
        if let tlsPort { c.tls.port = Int(tlsPort) }
        if let upstream {
            do {
                _ = try UpstreamServerURL(parsing: upstream)
            } catch {
                throw CLIError("--upstream \(error)")
            }
            c.upstreams.removeAll { $0.name == Self.quickUpstreamName }
            // Its settings from DCSERVE_UPSTREAMS_UPSTREAM_* (e.g. _READ_TIMEOUT_SECONDS), as for a file's.
            c.upstreams.append(try ConfigurationLoader.quickUpstream(name: Self.quickUpstreamName, url: upstream))
            c.routes = [Route(name: Self.quickUpstreamName, prefix: "/", upstream: Self.quickUpstreamName)]
        }
        try rules.apply(to: &c)
        try c.validate()
        return c
    }

    /// Quick mode's defaults, as a configuration document: no second port unless asked for
    /// (`--admin-port`), and the decision header on (quick mode is for client developers: say why).
    static let quickModeDefaults = #"{"admin": {"enabled": false}, "server": {"decisionHeader": true}}"#

    /// Quick mode's upstream and route name.
    static let quickUpstreamName = "upstream"

    /// The flag given on the command line for each key it overrides, so an out-of-range value is
    /// reported under the name the user typed.
    var flagsByKey: [String: String] {
        var flags: [String: String] = [:]
        func note(_ given: Any?, _ key: String, _ flag: String) { if given != nil { flags[key] = flag } }
        note(port, "server.port", "--port"); note(adminPort, "admin.port", "--admin-port")
        note(idleTimeout, "server.idleTimeoutSeconds", "--idle-timeout")
        note(shutdownTimeout, "server.shutdownDeadlineSeconds", "--shutdown-timeout")
        note(headerTimeout, "server.headerTimeoutSeconds", "--header-timeout")
        note(bodyTimeout, "server.bodyTimeoutSeconds", "--body-timeout")
        note(writeTimeout, "server.writeTimeoutSeconds", "--write-timeout")
        note(maxConnections, "server.maxConnections", "--max-connections")
        note(maxRequestsPerConnection, "server.maxRequestsPerConnection", "--max-requests-per-connection")
        note(maxBodyBytes, "server.maxBodyBytes", "--max-body-bytes")
        note(eventLoops, "server.eventLoops", "--event-loops")
        note(logLevel, "server.logLevel", "--log-level")
        note(root, "site.root", "--root"); note(store, "store.path", "--store")
        note(tlsCertificate, "tls.certificate", "--tls-cert"); note(tlsKey, "tls.key", "--tls-key")
        note(tlsPort, "tls.port", "--tls-port"); note(host.first, "server.host", "--host")
        return flags
    }

    /// `error` under the flag's name when a command-line option set that key.
    func describe(_ error: ConfigurationError) -> String {
        if let message = rules.describe(error, fromFile: config != nil) { return message }
        guard let flag = flagsByKey[error.key] else { return error.description }
        return "\(flag): \(error.reason) (\(error.key))"
    }

    func run() async throws {
        let appConfiguration: DCServeConfiguration
        do {
            appConfiguration = try await makeApplicationConfiguration()
        } catch let error as ConfigurationError {
            throw CLIError(describe(error))
        }
        let level = Logger.Level(rawValue: appConfiguration.server.logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            if label == "dcserve.access" {
                // One line per request: batched writes instead of one unbuffered write each.
                return BufferedLogHandler(label: label, writer: .standardError, logLevel: level)
            }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: "dcserve")
        logger.logLevel = level
        var accessLogger = Logger(label: "dcserve.access")
        accessLogger.logLevel = appConfiguration.server.accessLog ? level : .critical
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))

        do {
            let server = try DCServeServer(configuration: appConfiguration, hosts: host, registry: registry,
                                           logger: logger, accessLogger: accessLogger,
                                           upstreamHandler: ReverseProxyHandler.factory(logger: logger))
            _ = try await server.run { BufferedLogWriter.standardError.flush() }
        } catch let error as ConfigurationError {
            throw CLIError(describe(error))
        } catch let error as DCServeServer.StartError {
            throw CLIError(error.description)
        }
        BufferedLogWriter.standardError.flush()
    }
}
