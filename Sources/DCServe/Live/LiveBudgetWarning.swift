import Foundation
import Logging
import Locking

/// The log line saying live versions are refused over budget (``LiveVersionIndex/offer``): at most one
/// a minute, counting the refusals since the previous line. Thread-safe.
final class LiveBudgetWarning: Sendable {
    /// At most one line this often (seconds).
    static let interval: TimeInterval = 60

    private struct State {
        var since = 0
        var lastLine: Date?
    }

    private let logger: Logger
    private let state = Locked(State())

    init(logger: Logger) { self.logger = logger }

    /// Counts one refused version of `rule`; logs when a line is due (the first refusal, then a minute
    /// after the previous line). True when it logged.
    @discardableResult
    func refused(rule: String, index: LiveVersionIndex, now: Date = Date()) -> Bool {
        let due: Int? = state.withLock { s in
            s.since += 1
            if let last = s.lastLine, now.timeIntervalSince(last) < Self.interval, now >= last { return nil }
            defer { s.since = 0; s.lastLine = now }
            return s.since
        }
        guard let due else { return false }
        let limits = [index.maxBytes.map { "store.maxBytes \($0) bytes" }, index.maxEntries.map { "\($0) versions" }]
            .compactMap { $0 }.joined(separator: ", ")
        logger.warning("""
            live rule \(rule): the working set exceeds what can be kept (\(limits)); new versions are not advertised \
            while every retained one is still within its lifetime: raise store.maxBytes (and server.memoryBytes)
            """, metadata: ["rule": "\(rule)", "refusedVersions": "\(due)", "retainedVersions": "\(index.count)",
                            "retainedBytes": "\(index.totalBytes)"])
        return true
    }
}
