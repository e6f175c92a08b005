import ArgumentParser
import Dispatch
import Foundation
import DCServe
import DictionaryTransport
import HTTPServer
import Logging
import Metrics
import Prometheus
import Synchronization

/// `dcserve serve`: the dictionary-compression server, until SIGTERM/SIGINT.
///
/// Two ways to start it: `--config FILE` (the JSON configuration, with `DCSERVE_*` environment
/// overrides), or quick mode for client developers, `--root DIR --dictionaries PATTERN [--store DIR]`,
/// which needs no file. Command-line options override the file.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve a directory over HTTP/1.1 with dictionary compression (dcb/dcz).",
        discussion: """
            Start with --config FILE, or in quick mode with --root DIR and one or more --dictionaries PATTERN \
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

    @Option(name: .customLong("dictionaries"), help: ArgumentHelp(
        "Quick mode: a URL path pattern whose responses become dictionaries (repeatable).", valueName: "pattern"))
    var dictionaryPatterns: [String] = []

    @Option(help: "Dictionary store directory (overrides store.path; default dictionaries/).")
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
        if config == nil && root == nil {
            throw ValidationError("give --config FILE, or --root DIR (with --dictionaries PATTERN) for quick mode")
        }
    }

    /// The application configuration: the file (if any), then the command line on top.
    func makeApplicationConfiguration() async throws -> DCServeConfiguration {
        var c = DCServeConfiguration()
        if let config {
            c = try await ConfigurationLoader.load(file: config)
        } else {
            c.admin.enabled = adminPort != nil  // quick mode: no second port unless asked for
        }
        if let root { c.site.root = root }
        if let store { c.store.path = store }
        if let port { c.server.port = Int(port) }
        if let adminPort { c.admin.port = Int(adminPort) }
        if noAdmin { c.admin.enabled = false }
        if let host = host.first { c.server.host = host }
        if let idleTimeout { c.server.idleTimeoutSeconds = idleTimeout }
        if let shutdownTimeout { c.server.shutdownDeadlineSeconds = shutdownTimeout }
        if let headerTimeout { c.server.headerTimeoutSeconds = headerTimeout }
        if let bodyTimeout { c.server.bodyTimeoutSeconds = bodyTimeout }
        if let maxConnections { c.server.maxConnections = maxConnections }
        if let maxRequestsPerConnection { c.server.maxRequestsPerConnection = maxRequestsPerConnection }
        if let maxBodyBytes { c.server.maxBodyBytes = maxBodyBytes }
        if let eventLoops { c.server.eventLoops = eventLoops }
        if let logLevel { c.server.logLevel = logLevel }
        if let accessLog { c.server.accessLog = accessLog }
        if let tlsCertificate { c.tls.certificate = tlsCertificate }
        if let tlsKey { c.tls.key = tlsKey }
        if let tlsPort { c.tls.port = Int(tlsPort) }
        for (i, pattern) in dictionaryPatterns.enumerated() {
            do {
                try URLPattern.validate(pattern)
            } catch {
                throw CLIError("--dictionaries \(pattern): \(error)")
            }
            c.rules.append(DictionaryRule(name: "quick\(i + 1)", match: pattern))
        }
        try c.validate()
        return c
    }

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
        guard let flag = flagsByKey[error.key] else { return error.description }
        return "\(flag): \(error.reason) (\(error.key))"
    }

    func makeConfiguration(_ app: DCServeConfiguration) -> ServerConfiguration {
        var c = ServerConfiguration()
        let port = UInt16(app.server.port)
        c.listenAddresses = (host.isEmpty ? [app.server.host] : host).map { (host: $0, port: port) }
        c.headerReadTimeout = .configured(seconds: app.server.headerTimeoutSeconds)
        c.bodyReadTimeout = .configured(seconds: app.server.bodyTimeoutSeconds)
        c.writeTimeout = .configured(seconds: app.server.writeTimeoutSeconds)
        c.idleTimeout = .configured(seconds: app.server.idleTimeoutSeconds)
        c.maxConnections = app.server.maxConnections
        c.maxRequestsPerConnection = app.server.maxRequestsPerConnection
        c.limits.maxBodyBytes = app.server.maxBodyBytes
        if let eventLoops = app.server.eventLoops { c.eventLoopCount = eventLoops }
        applyTLS(app, to: &c)
        return c
    }

    /// HTTPS listener, redirect and trusted proxies (validated by `DCServeConfiguration.validate()`).
    func applyTLS(_ app: DCServeConfiguration, to c: inout ServerConfiguration) {
        c.redirectToHTTPS = app.server.redirectToHTTPS
        c.trustedProxies = (try? TrustedProxies(app.server.trustedProxies)) ?? TrustedProxies()
        guard let certificate = app.tls.certificate, let key = app.tls.key else { return }
        var tls = TLSConfiguration(certificateChainFile: certificate, privateKeyFile: key)
        tls.handshakeTimeout = .configured(seconds: app.tls.handshakeTimeoutSeconds)
        for entry in app.tls.sni {
            tls.sni[entry.serverName.lowercased()] = .init(chainFile: entry.certificate, keyFile: entry.key)
        }
        c.tls = tls
        let hosts = app.tls.host.map { [$0] } ?? (host.isEmpty ? [app.server.host] : host)
        c.tlsListenAddresses = hosts.map { (host: $0, port: UInt16(app.tls.port)) }
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
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))

        let app: DCServeApplication
        do {
            app = try DCServeApplication(configuration: appConfiguration, logger: logger)
        } catch let error as ConfigurationError {
            throw CLIError(error.description)
        }
        var accessLogger = Logger(label: "dcserve.access")
        accessLogger.logLevel = appConfiguration.server.accessLog ? level : .critical
        let accessLog = AccessLog(logger: accessLogger, excludedPaths: app.accessLogExclusions)

        let server = try Self.start(makeConfiguration(appConfiguration), handler: app.handler, accessLog: accessLog,
                                    name: "listening", logger: logger, metadata: [
                                        "root": "\(app.staticFiles.resolvedRoot)", "store": "\(appConfiguration.store.path)",
                                        "rules": "\(appConfiguration.rules.map(\.name).joined(separator: ","))"])
        var servers = [server]
        if appConfiguration.admin.enabled {
            var adminConfiguration = ServerConfiguration()
            adminConfiguration.listenAddresses = [(host: appConfiguration.admin.host, port: UInt16(appConfiguration.admin.port))]
            adminConfiguration.maxConnections = 64
            let admin = AdminHandler(registry: registry, metricsPath: appConfiguration.admin.metricsPath) {
                app.refreshGauges(openConnections: server.connectionCount)
                if let tls = server.tlsHandshakes {
                    app.metrics.tlsHandshakes(completed: tls.completed, resumed: tls.resumed, failed: tls.failed)
                }
            }.wrapped(in: [app.healthMiddleware])
            servers.append(try Self.start(adminConfiguration, handler: admin, accessLog: accessLog,
                                          name: "admin listening", logger: logger, metadata: [:]))
        }
        if appConfiguration.tls.certificate != nil { CertificateReloadSignal.install(server: server, logger: logger) }
        app.readiness.setListenersOpen(true)
        let running = servers

        let forced = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            ShutdownSignals.install(logger: logger) {
                app.readiness.setListenersOpen(false)
                let remaining = Countdown(running.count) { forced in done.resume(returning: forced) }
                for s in running {
                    s.shutdown(deadline: .configured(seconds: appConfiguration.server.shutdownDeadlineSeconds)) { remaining.arrive(forced: $0) }
                }
            }
        }
        app.stop()
        BufferedLogWriter.standardError.flush()
        var stopped: Logger.Metadata = ["forced": "\(forced)"]
        if let tls = server.tlsHandshakes {
            stopped["tlsHandshakes"] = "\(tls.completed)"
            stopped["tlsResumed"] = "\(tls.resumed)"
            stopped["tlsFailed"] = "\(tls.failed)"
        }
        logger.info("stopped", metadata: stopped)
    }
}

extension ServeCommand {
    /// Starts one HTTP server and logs `<name> on http://HOST:PORT` for every bound address; a bind
    /// failure becomes a clear CLI error.
    static func start(_ configuration: ServerConfiguration, handler: any HTTPHandler, accessLog: AccessLog,
                      name: String, logger: Logger, metadata: Logger.Metadata) throws -> HTTPServer {
        let server = HTTPServer(configuration: configuration, handler: handler, accessLog: accessLog)
        do {
            try server.start()
        } catch let error as TLSContextError {
            throw CLIError("cannot start the HTTPS listener: \(error)")
        } catch let error as SocketError {
            let addresses = configuration.listenAddresses.map { "\($0.host):\($0.port)" }.joined(separator: ", ")
            throw CLIError(error.isAddressInUse ? "cannot listen on \(addresses): port already in use"
                                                : "cannot listen on \(addresses): \(error)")
        }
        for address in server.boundEndpoints {
            let host = address.host.contains(":") ? "[\(address.host)]" : address.host
            logger.info("\(name) on \(address.scheme)://\(host):\(address.port)", metadata: metadata)
        }
        return server
    }
}

/// Calls `done` once `count` arrivals happened; `forced` is true if any arrival was forced.
/// Arrivals come from server shutdown callbacks on arbitrary queues, hence the lock.
final class Countdown: Sendable {
    private let state: Mutex<(left: Int, forced: Bool)>
    private let done: @Sendable (Bool) -> Void

    init(_ count: Int, done: @escaping @Sendable (Bool) -> Void) {
        state = Mutex((count, false))
        self.done = done
    }

    func arrive(forced: Bool) {
        let result: Bool? = state.withLock { s in
            s.left -= 1
            s.forced = s.forced || forced
            return s.left == 0 ? s.forced : nil
        }
        if let result { done(result) }
    }
}

/// SIGTERM/SIGINT through DispatchSource signal sources: the first one starts the graceful shutdown.
enum ShutdownSignals {
    nonisolated(unsafe) private static var sources: [DispatchSourceSignal] = []

    static func install(logger: Logger, onSignal: @escaping @Sendable () -> Void) {
        let queue = DispatchQueue(label: "dcserve.signals")
        let fired = OnceGate()
        for sig in [SIGTERM, SIGINT] {
            signal(sig, SIG_IGN)  // let the dispatch source see it instead of the default action
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler {
                guard fired.pass() else { return }
                logger.info("shutting down", metadata: ["signal": "\(sig == SIGTERM ? "SIGTERM" : "SIGINT")"])
                onSignal()
            }
            source.resume()
            sources.append(source)
        }
    }
}

/// Lets exactly one caller through. Only touched on the signal queue, so the plain Bool is safe.
final class OnceGate: @unchecked Sendable {
    private var passed = false
    func pass() -> Bool { if passed { return false }; passed = true; return true }
}
