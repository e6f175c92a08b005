import ArgumentParser
import Dispatch
import Foundation
import HTTPServer
import Logging

/// `dcserve serve --root DIR [--port N] [--host ADDR]`: serve static files until SIGTERM/SIGINT.
///
/// Options map one-to-one onto `ServerConfiguration` in `makeConfiguration()`, so a config file
/// (added later) can produce the same struct and the options override it.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve a directory over HTTP/1.1.",
        discussion: "Binds 127.0.0.1 unless --host says otherwise. --port 0 picks a free port; the log line "
            + "'listening on http://HOST:PORT' names it. SIGTERM/SIGINT shut down gracefully."
    )

    @Option(help: "Document root directory.")
    var root: String

    @Option(help: "TCP port; 0 picks a free one.")
    var port: UInt16 = 8080

    @Option(help: "Address to bind (IPv4 or IPv6 literal). Repeat for several.")
    var host: [String] = []

    @Option(help: "Seconds to let in-flight requests finish on SIGTERM/SIGINT before closing connections.")
    var shutdownTimeout: Double = 10

    @Option(help: "Seconds a request head may take to arrive (slowloris defence).")
    var headerTimeout: Double = 10

    @Option(help: "Seconds a request body may take to arrive.")
    var bodyTimeout: Double = 30

    @Option(help: "Seconds an idle keep-alive connection stays open.")
    var idleTimeout: Double = 60

    @Option(help: "Most concurrent connections; more get 503 and are closed.")
    var maxConnections: Int = 16_384

    @Option(help: "Most requests per keep-alive connection.")
    var maxRequestsPerConnection: Int = 10_000

    @Option(help: "Largest request body in bytes.")
    var maxBodyBytes: Int = 1 << 20

    @Flag(inversion: .prefixedNo, help: "One log line per request (logger dcserve.access, level info, written in batches at least every 100 ms).")
    var accessLog = true

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown log level \(logLevel)") }
        for t in [shutdownTimeout, headerTimeout, bodyTimeout, idleTimeout] where !(t > 0) {
            throw ValidationError("timeouts must be positive")
        }
    }

    func makeConfiguration() -> ServerConfiguration {
        var c = ServerConfiguration()
        c.listenAddresses = (host.isEmpty ? ["127.0.0.1"] : host).map { (host: $0, port: port) }
        c.headerReadTimeout = .milliseconds(Int(headerTimeout * 1000))
        c.bodyReadTimeout = .milliseconds(Int(bodyTimeout * 1000))
        c.idleTimeout = .milliseconds(Int(idleTimeout * 1000))
        c.maxConnections = maxConnections
        c.maxRequestsPerConnection = maxRequestsPerConnection
        c.limits.maxBodyBytes = maxBodyBytes
        return c
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
        var accessLogger = Logger(label: "dcserve.access")
        accessLogger.logLevel = accessLog ? level : .critical

        let handler: StaticFileHandler
        do {
            handler = try StaticFileHandler(root: root)
        } catch {
            throw CLIError("\(error)")
        }
        let configuration = makeConfiguration()
        let server = HTTPServer(configuration: configuration, handler: handler, accessLog: AccessLog(logger: accessLogger))
        do {
            try server.start()
        } catch let error as SocketError {
            let addresses = configuration.listenAddresses.map { "\($0.host):\($0.port)" }.joined(separator: ", ")
            throw CLIError(error.isAddressInUse ? "cannot listen on \(addresses): port already in use"
                                                : "cannot listen on \(addresses): \(error)")
        }
        for address in server.boundAddresses {
            let host = address.host.contains(":") ? "[\(address.host)]" : address.host
            logger.info("listening on http://\(host):\(address.port)", metadata: ["root": "\(handler.resolvedRoot)"])
        }

        let forced = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            ShutdownSignals.install(logger: logger) {
                server.shutdown(deadline: .milliseconds(Int(shutdownTimeout * 1000))) { forced in done.resume(returning: forced) }
            }
        }
        BufferedLogWriter.standardError.flush()
        logger.info("stopped", metadata: ["forced": "\(forced)"])
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
