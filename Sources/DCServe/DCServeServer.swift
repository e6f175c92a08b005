import Dispatch
import Foundation
import HTTPServer
import Logging
import Prometheus

/// The `dcserve serve` process without its command line: the application, the main HTTP server
/// (plain and HTTPS listeners) and the admin server (metrics, health), started and stopped in order.
///
/// Order: `init` builds the application (loads the store) and both servers but opens nothing;
/// `start()` opens the main listeners, then the admin listener, installs SIGHUP certificate reload,
/// marks the application ready (and tells systemd `READY=1` when started with `Type=notify`) and
/// only then starts background work (precompression). A start that
/// fails stops everything it started — listeners, background work, housekeeping — before throwing,
/// so the process can exit without background hashing racing OpenSSL's exit-time cleanup.
/// `shutdown()` drains the servers (up to `server.shutdownDeadlineSeconds`), then
/// stops the application (background work, final store flush).
///
/// Thread-safety: immutable after `init`; `start()` and `shutdown()` are each called once, in order.
public final class DCServeServer: Sendable {
    public let configuration: DCServeConfiguration
    public let application: DCServeApplication
    public let main: HTTPServer
    public let admin: HTTPServer?
    let logger: Logger

    /// A start-up failure with the message for the operator (port in use, unusable certificate, …).
    public struct StartError: Error, CustomStringConvertible {
        public let description: String
    }

    /// `configuration` must be validated. `hosts` overrides `server.host` (several plain listeners);
    /// `registry` is what the admin listener exposes; `accessLogger` logs one line per request
    /// (level `.critical` or higher silences it). Throws `ConfigurationError` (site root, store, an
    /// upstream handler that cannot be built).
    public init(configuration: DCServeConfiguration, hosts: [String] = [],
                registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
                logger: Logger = Logger(label: "dcserve"), accessLogger: Logger = Logger(label: "dcserve.access"),
                upstreamHandler: UpstreamHandlerFactory = NoProxyHandler.factory) throws {
        self.configuration = configuration
        self.logger = logger
        let app = try DCServeApplication(configuration: configuration, logger: logger, upstreamHandler: upstreamHandler,
                                         startBackgroundWorkNow: false)
        application = app
        let accessLog = AccessLog(logger: accessLogger, excludedPaths: app.accessLogExclusions)
        var mainConfiguration = Self.serverConfiguration(configuration, hosts: hosts)
        if let router = app.router {
            // Request bodies routed to an upstream are streamed to it as they arrive (back-pressure).
            mainConfiguration.streamsRequestBody = { router.streamsRequestBody($0) }
        }
        let main = HTTPServer(configuration: mainConfiguration, handler: app.handler, accessLog: accessLog)
        self.main = main
        if configuration.admin.enabled {
            var adminConfiguration = ServerConfiguration()
            adminConfiguration.listenAddresses = [(host: configuration.admin.host, port: UInt16(configuration.admin.port))]
            adminConfiguration.maxConnections = 64
            let tunnels = TunnelMetrics()
            let handler = AdminHandler(registry: registry, metricsPath: configuration.admin.metricsPath,
                                       liveView: .init(store: app.store, activity: app.activity)) {
                app.refreshGauges(openConnections: main.connectionCount)
                tunnels.refresh(from: UpgradeTunnel.counters)
                if let tls = main.tlsHandshakes {
                    app.metrics.tlsHandshakes(completed: tls.completed, resumed: tls.resumed, failed: tls.failed)
                }
            }.wrapped(in: [app.healthMiddleware, AdminHostCheck(allowedHosts: configuration.admin.allowedHosts)])
            admin = HTTPServer(configuration: adminConfiguration, handler: handler, accessLog: accessLog)
        } else {
            admin = nil
        }
    }

    /// The main server's settings from the configuration (durations converted with
    /// `Duration.configured(seconds:)`, which never traps).
    public static func serverConfiguration(_ app: DCServeConfiguration, hosts: [String] = []) -> ServerConfiguration {
        var c = ServerConfiguration()
        let hosts = hosts.isEmpty ? [app.server.host] : hosts
        c.listenAddresses = hosts.map { (host: $0, port: UInt16(app.server.port)) }
        c.headerReadTimeout = .configured(seconds: app.server.headerTimeoutSeconds)
        c.bodyReadTimeout = .configured(seconds: app.server.bodyTimeoutSeconds)
        c.writeTimeout = .configured(seconds: app.server.writeTimeoutSeconds)
        c.idleTimeout = .configured(seconds: app.server.idleTimeoutSeconds)
        c.maxConnections = app.server.maxConnections
        c.maxRequestsPerConnection = app.server.maxRequestsPerConnection
        c.limits.maxBodyBytes = app.server.maxBodyBytes
        if let eventLoops = app.server.eventLoops { c.eventLoopCount = eventLoops }
        c.redirectToHTTPS = app.server.redirectToHTTPS
        c.trustedProxies = (try? TrustedProxies(app.server.trustedProxies)) ?? TrustedProxies()
        guard let certificate = app.tls.certificate, let key = app.tls.key else { return c }
        var tls = TLSConfiguration(certificateChainFile: certificate, privateKeyFile: key)
        tls.handshakeTimeout = .configured(seconds: app.tls.handshakeTimeoutSeconds)
        for entry in app.tls.sni {
            tls.sni[entry.serverName.lowercased()] = .init(chainFile: entry.certificate, keyFile: entry.key)
        }
        c.tls = tls
        c.tlsListenAddresses = (app.tls.host.map { [$0] } ?? hosts).map { (host: $0, port: UInt16(app.tls.port)) }
        return c
    }

    /// Opens the listeners and starts background work; see the type's comment for the order. On
    /// failure nothing keeps running and `StartError` says why.
    public func start() throws {
        do {
            try Self.open(main, name: "listening", logger: logger, metadata: [
                "root": "\(application.staticFiles.map { "\($0.resolvedRoot)" } ?? "-")",
                "store": "\(configuration.store.logDescription)",
                "rules": "\(configuration.rules.map(\.name).joined(separator: ","))",
                "routes": "\(configuration.routes.map { "\($0.prefix)→\($0.upstream ?? "site")" }.joined(separator: ","))",
            ])
            if let admin {
                try Self.open(admin, name: "admin listening", logger: logger, metadata: [:])
            }
        } catch {
            stopAfterFailedStart()
            throw error
        }
        if configuration.tls.isEnabled { CertificateReloadSignal.install(server: main, logger: logger) }
        application.readiness.setListenersOpen(true)
        SystemdNotification.send("READY=1")
        application.startBackgroundWork()
    }

    /// Closes whatever listener opened (no connection was served long enough to matter) and stops
    /// the application's background work.
    private func stopAfterFailedStart() {
        let done = DispatchSemaphore(value: 0)
        let remaining = Countdown(admin == nil ? 1 : 2) { _ in done.signal() }
        for server in [main] + (admin.map { [$0] } ?? []) {
            server.shutdown(deadline: .zero) { remaining.arrive(forced: $0) }
        }
        done.wait()
        application.stop()
    }

    /// Graceful shutdown: not ready, listeners closed, in-flight requests get
    /// `server.shutdownDeadlineSeconds`, then the application stops (background work, store flush).
    /// `flushLogs` runs just before the final "stopped" line (buffered access-log writers).
    /// Returns true if connections had to be closed at the deadline.
    public func shutdown(flushLogs: () -> Void = {}) async -> Bool {
        SystemdNotification.send("STOPPING=1")
        application.readiness.setListenersOpen(false)
        let servers = [main] + (admin.map { [$0] } ?? [])
        let deadline = Duration.configured(seconds: configuration.server.shutdownDeadlineSeconds)
        let forced = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            let remaining = Countdown(servers.count) { done.resume(returning: $0) }
            for s in servers { s.shutdown(deadline: deadline) { remaining.arrive(forced: $0) } }
        }
        application.stop()
        flushLogs()
        var stopped: Logger.Metadata = ["forced": "\(forced)"]
        if let tls = main.tlsHandshakes {
            stopped["tlsHandshakes"] = "\(tls.completed)"
            stopped["tlsResumed"] = "\(tls.resumed)"
            stopped["tlsFailed"] = "\(tls.failed)"
        }
        logger.info("stopped", metadata: stopped)
        return forced
    }

    /// `start()`, then serve until SIGTERM or SIGINT, then `shutdown()`. Returns whether it was forced.
    /// The signal handlers are installed before the listeners open, so a signal that arrives during
    /// start-up still shuts down gracefully.
    public func run(flushLogs: () -> Void = {}) async throws -> Bool {
        let (signals, signalled) = AsyncStream<Void>.makeStream()
        ShutdownSignals.install(logger: logger) { signalled.yield() }
        try start()
        for await _ in signals { break }
        return await shutdown(flushLogs: flushLogs)
    }

    /// Starts one HTTP server and logs `<name> on http://HOST:PORT` for every bound address; a bind
    /// or certificate failure becomes a `StartError`.
    static func open(_ server: HTTPServer, name: String, logger: Logger, metadata: Logger.Metadata) throws {
        do {
            try server.start()
        } catch let error as TLSContextError {
            throw StartError(description: "cannot start the HTTPS listener: \(error)")
        } catch let error as SocketError {
            let addresses = server.configuration.listenAddresses.map { "\($0.host):\($0.port)" }.joined(separator: ", ")
            throw StartError(description: error.isAddressInUse ? "cannot listen on \(addresses): port already in use"
                                                               : "cannot listen on \(addresses): \(error)")
        }
        for address in server.boundEndpoints {
            let host = address.host.contains(":") ? "[\(address.host)]" : address.host
            logger.info("\(name) on \(address.scheme)://\(host):\(address.port)", metadata: metadata)
        }
    }
}
