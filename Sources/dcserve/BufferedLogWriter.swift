import Dispatch
import Foundation
import Logging
import Locking

/// Writes log lines to a file descriptor (stderr) in batches: lines are appended to a buffer under a
/// mutex and written when it exceeds 64 KiB or at least every 100 ms, so a busy access log costs no
/// system call per request. The writes happen on the writer's own serial queue, in order, so a slow
/// log consumer (a pipe) does not stall the event loop that logged; only when more than
/// `maxInFlightBytes` wait for it does the logging thread wait too (back-pressure, nothing dropped).
/// `flush()` writes what is pending and waits for it (called at shutdown).
///
/// Thread-safety: all state behind one `Locked`; writes run on `queue` with buffers taken from it.
final class BufferedLogWriter: Sendable {
    static let standardError = BufferedLogWriter(descriptor: 2)

    private struct State {
        var buffer: [UInt8] = []
        var flushScheduled = false
        var second = -1
        var timestamp: [UInt8] = []
        /// Bytes handed to `queue` and not yet written.
        var inFlight = 0
    }
    static let batchBytes = 64 * 1024
    static let maxInFlightBytes = 8 << 20
    private let descriptor: Int32
    private let state = Locked(State())
    private let queue = DispatchQueue(label: "dcserve.log-writer")

    init(descriptor: Int32) { self.descriptor = descriptor }

    func append(level: Logger.Level, label: String, message: String, source: String) {
        let mustWait: Bool = state.withLock { s in
            let now = Int(Date().timeIntervalSince1970)
            if now != s.second {
                s.second = now
                s.timestamp = Array(Self.formatter.string(from: Date(timeIntervalSince1970: TimeInterval(now))).utf8)
            }
            s.buffer += s.timestamp
            s.buffer.append(0x20)
            s.buffer += level.rawValue.utf8
            s.buffer.append(0x20)
            s.buffer += label.utf8
            s.buffer += ": [".utf8
            s.buffer += source.utf8
            s.buffer += "] ".utf8
            s.buffer += message.utf8
            s.buffer.append(0x0A)
            if s.buffer.count >= Self.batchBytes {
                // Enqueued under the lock, so batches reach `queue` in the order they were filled.
                let taken = s.buffer
                s.buffer = []
                s.buffer.reserveCapacity(Self.batchBytes + 1024)
                s.inFlight += taken.count
                queue.async { self.writeAndRelease(taken) }
                return s.inFlight > Self.maxInFlightBytes
            }
            if !s.flushScheduled {
                s.flushScheduled = true
                queue.asyncAfter(deadline: .now() + .milliseconds(100)) { self.flushOnQueue() }
            }
            return false
        }
        if mustWait { queue.sync {} }  // the consumer is far behind: wait for the queued writes
    }

    /// Writes everything pending and returns when it is written. Not from `queue`.
    func flush() {
        queue.sync { self.flushOnQueue() }
    }

    /// On `queue`: takes the pending lines and writes them after the batches queued before.
    private func flushOnQueue() {
        let pending: [UInt8] = state.withLock { s in
            s.flushScheduled = false
            let taken = s.buffer
            s.buffer = []
            return taken
        }
        write(pending)
    }

    private func writeAndRelease(_ bytes: [UInt8]) {
        write(bytes)
        state.withLock { $0.inFlight -= bytes.count }
    }

    private func write(_ bytes: [UInt8]) {
        var done = 0
        bytes.withUnsafeBytes { b in
            while done < b.count {
                let n = Foundation.write(descriptor, b.baseAddress! + done, b.count - done)
                if n < 0 { if errno == EINTR { continue }; return }
                done += n
            }
        }
    }

    // Used only under the writer's mutex.
    private static let formatter: DateFormatter = {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyy-MM-dd'T'HH:mm:ssZ"
        return f
    }()
}

/// A swift-log handler that formats like `StreamLogHandler` (metadata omitted) and writes through a
/// `BufferedLogWriter`. Used for the access log, where one unbuffered write per request is too costly.
struct BufferedLogHandler: LogHandler {
    let label: String
    let writer: BufferedLogWriter
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        writer.append(level: event.level, label: label, message: event.message.description, source: event.source)
    }
}
