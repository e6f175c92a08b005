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

    @Option(help: "Seconds a request head may take to arrive (slowloris defence).")
    var headerTimeout: Double = 10

    @Option(help: "Seconds a request body may take to arrive.")
    var bodyTimeout: Double = 30

    @Option(help: "Seconds an idle keep-alive connection stays open (overrides server.idleTimeoutSeconds).")
    var idleTimeout: Double?

    @Option(help: "Most concurrent connections; more get 503 and are closed (overrides server.maxConnections).")
    var maxConnections: Int?

    @Option(help: "Most requests per keep-alive connection.")
    var maxRequestsPerConnection: Int = 10_000

    @Option(help: "Largest request body in bytes.")
    var maxBodyBytes: Int = 1 << 20

    @Option(help: "Event loops serving connections (default: one per core).")
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

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown log level \(logLevel)") }
        if let eventLoops, !(1...256).contains(eventLoops) { throw ValidationError("--event-loops must be between 1 and 256") }
        for t in [shutdownTimeout, headerTimeout, bodyTimeout, idleTimeout].compactMap({ $0 }) where !(t > 0) {
            throw ValidationError("timeouts must be positive")
        }
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
        if let store {
            if store.hasPrefix("postgres://") || store.hasPrefix("postgresql://") {  // shared store (issue #15)
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
        if let idleTimeout { c.server.idleTimeoutSeconds = Int(idleTimeout.rounded(.up)) }
        if let shutdownTimeout { c.server.shutdownDeadlineSeconds = Int(shutdownTimeout.rounded(.up)) }
        if let maxConnections { c.server.maxConnections = maxConnections }
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

    func makeConfiguration(_ app: DCServeConfiguration) -> ServerConfiguration {
        var c = ServerConfiguration()
        let port = UInt16(app.server.port)
        c.listenAddresses = (host.isEmpty ? [app.server.host] : host).map { (host: $0, port: port) }
        c.headerReadTimeout = .milliseconds(Int(headerTimeout * 1000))
        c.bodyReadTimeout = .milliseconds(Int(bodyTimeout * 1000))
        c.idleTimeout = .milliseconds(Int((idleTimeout ?? Double(app.server.idleTimeoutSeconds)) * 1000))
        c.maxConnections = app.server.maxConnections
        c.maxRequestsPerConnection = maxRequestsPerConnection
        c.limits.maxBodyBytes = maxBodyBytes
        if let eventLoops { c.eventLoopCount = eventLoops }
        applyTLS(app, to: &c)
        return c
    }

    /// HTTPS listener, redirect and trusted proxies (validated by `DCServeConfiguration.validate()`).
    func applyTLS(_ app: DCServeConfiguration, to c: inout ServerConfiguration) {
        c.redirectToHTTPS = app.server.redirectToHTTPS
        c.trustedProxies = (try? TrustedProxies(app.server.trustedProxies)) ?? TrustedProxies()
        guard let certificate = app.tls.certificate, let key = app.tls.key else { return }
        var tls = TLSConfiguration(certificateChainFile: certificate, privateKeyFile: key)
        tls.handshakeTimeout = .seconds(app.tls.handshakeTimeoutSeconds)
        for entry in app.tls.sni {
            tls.sni[entry.serverName.lowercased()] = .init(chainFile: entry.certificate, keyFile: entry.key)
        }
        c.tls = tls
        let hosts = app.tls.host.map { [$0] } ?? (host.isEmpty ? [app.server.host] : host)
        c.tlsListenAddresses = hosts.map { (host: $0, port: UInt16(app.tls.port)) }
    }

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
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

        let appConfiguration: DCServeConfiguration
        let app: DCServeApplication
        do {
            appConfiguration = try await makeApplicationConfiguration()
            app = try DCServeApplication(configuration: appConfiguration, logger: logger)
        } catch let error as ConfigurationError {
            throw CLIError(error.description)
        }
        var accessLogger = Logger(label: "dcserve.access")
        accessLogger.logLevel = appConfiguration.server.accessLog ? level : .critical
        let accessLog = AccessLog(logger: accessLogger, excludedPaths: app.accessLogExclusions)

        let server = try Self.start(makeConfiguration(appConfiguration), handler: app.handler, accessLog: accessLog,
                                    name: "listening", logger: logger, metadata: [
                                        "root": "\(app.staticFiles.resolvedRoot)", "store": "\(appConfiguration.store.kind == .postgres ? ((try? appConfiguration.store.postgres.settings())?.description ?? "postgres") : appConfiguration.store.path)",
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
                    s.shutdown(deadline: .seconds(appConfiguration.server.shutdownDeadlineSeconds)) { remaining.arrive(forced: $0) }
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
