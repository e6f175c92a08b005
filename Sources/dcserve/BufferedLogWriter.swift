import Dispatch
import Foundation
import Logging
import Synchronization

/// Writes log lines to a file descriptor (stderr) in batches: lines are appended to a buffer under a
/// mutex and written when it exceeds 64 KiB or at least every 100 ms, so a busy access log costs no
/// system call per request. `flush()` writes what is pending (called at shutdown).
///
/// Thread-safety: all state behind one `Mutex`; the write happens outside it with the taken buffer.
final class BufferedLogWriter: Sendable {
    static let standardError = BufferedLogWriter(descriptor: 2)

    private struct State {
        var buffer: [UInt8] = []
        var flushScheduled = false
        var second = -1
        var timestamp: [UInt8] = []
    }
    private let descriptor: Int32
    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "dcserve.log-writer")

    init(descriptor: Int32) { self.descriptor = descriptor }

    func append(level: Logger.Level, label: String, message: String, source: String) {
        let full: [UInt8]? = state.withLock { s in
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
            if s.buffer.count >= 64 * 1024 {
                let taken = s.buffer
                s.buffer = []
                return taken
            }
            if !s.flushScheduled {
                s.flushScheduled = true
                queue.asyncAfter(deadline: .now() + .milliseconds(100)) { self.flush() }
            }
            return nil
        }
        if let full { write(full) }
    }

    func flush() {
        let pending: [UInt8] = state.withLock { s in
            s.flushScheduled = false
            let taken = s.buffer
            s.buffer = []
            return taken
        }
        write(pending)
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
