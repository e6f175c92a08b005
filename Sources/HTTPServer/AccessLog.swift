#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPCore
import Logging

/// One line per request through swift-log at `.info`, label "dcserve.access":
/// `GET /index.html 200 1024B 0.213ms conn=42`, followed by the response's `accessLogNote` when it
/// has one (dcserve: `decision=dcz@0123456789abcdef rule=assets`).
/// Duration runs from the moment the request was parsed to the moment its last byte was queued for
/// sending, measured on the monotonic clock. With the logger's level above `.info` the line is never
/// formatted (swift-log messages are autoclosures), so disabling it costs one comparison per request.
/// Requests whose path (target without query) is in `excludedPaths` are not logged (health probes).
public struct AccessLog: Sendable {
    public let logger: Logger
    public let excludedPaths: Set<String>

    public init(logger: Logger = Logger(label: "dcserve.access"), excludedPaths: Set<String> = []) {
        self.logger = logger
        self.excludedPaths = excludedPaths
    }

    var isEnabled: Bool { logger.logLevel <= .info }

    func record(method: String, target: String, status: Int, bytes: Int64, startNanos: UInt64, connectionID: UInt64,
                note: (any CustomStringConvertible & Sendable)? = nil) {
        guard isEnabled else { return }
        if !excludedPaths.isEmpty, excludedPaths.contains(String(target.prefix { $0 != "?" })) { return }
        let micros = (MonotonicClock.nanoseconds() &- startNanos) / 1000
        let ms = "\(micros / 1000).\(String(micros % 1000 + 1000).dropFirst())"
        if let note {
            logger.info("\(method) \(target) \(status) \(bytes)B \(ms)ms conn=\(connectionID) \(note.description)", source: "HTTPServer")
        } else {
            logger.info("\(method) \(target) \(status) \(bytes)B \(ms)ms conn=\(connectionID)", source: "HTTPServer")
        }
    }
}
