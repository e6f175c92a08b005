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

    /// Whether lines are written: the logger's level, read once here (asking the logger copies its
    /// handler, once per request otherwise).
    let isEnabled: Bool

    public init(logger: Logger = Logger(label: "dcserve.access"), excludedPaths: Set<String> = []) {
        self.logger = logger
        self.excludedPaths = excludedPaths
        isEnabled = logger.logLevel <= .info
    }

    func record(method: String, target: String, status: Int, bytes: Int64, startNanos: UInt64, connectionID: UInt64,
                note: (any AccessLogNote)? = nil) {
        guard isEnabled else { return }
        if !excludedPaths.isEmpty, isExcluded(target) { return }
        let micros = (MonotonicClock.nanoseconds() &- startNanos) / 1000
        logger.info("\(Self.line(method: method, target: target, status: status, bytes: bytes, micros: micros, connectionID: connectionID, note: note))",
                    source: "HTTPServer")
    }

    /// Whether `target`'s path (before any `?`) is one of `excludedPaths`, compared as bytes.
    func isExcluded(_ target: String) -> Bool {
        let utf8 = target.utf8
        let path = utf8[..<(utf8.firstIndex(of: UInt8(ascii: "?")) ?? utf8.endIndex)]
        let count = path.count
        return excludedPaths.contains { $0.utf8.count == count && $0.utf8.elementsEqual(path) }
    }

    /// `GET /index.html 200 1024B 0.213ms conn=42[ note]`, written byte by byte into one string.
    /// The note is appended in place: the line is made with room for an ordinary note.
    static func line(method: String, target: String, status: Int, bytes: Int64, micros: UInt64, connectionID: UInt64,
                     note: (any AccessLogNote)?) -> String {
        let capacity = method.utf8.count + target.utf8.count + 128 + (note == nil ? 0 : 96)
        var line = String(unsafeUninitializedCapacity: capacity) { out in
            var i = 0
            func put(_ byte: UInt8) { out[i] = byte; i += 1 }
            func put(_ text: String) {
                let copied: Int? = text.utf8.withContiguousStorageIfAvailable { bytes in
                    guard let base = bytes.baseAddress else { return 0 }
                    (out.baseAddress! + i).initialize(from: base, count: bytes.count)
                    return bytes.count
                }
                if let copied { i += copied } else { for b in text.utf8 { out[i] = b; i += 1 } }
            }
            func put(decimal value: UInt64, minimumDigits: Int = 1) {
                var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                             UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
                    (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
                var n = 0, v = value
                withUnsafeMutableBytes(of: &digits) { d in
                    repeat { d[n] = UInt8(truncatingIfNeeded: v % 10) + 0x30; v /= 10; n += 1 } while v > 0 || n < minimumDigits
                    while n > 0 { n -= 1; put(d[n]) }
                }
            }
            put(method); put(0x20)
            put(target); put(0x20)
            put(decimal: UInt64(max(status, 0))); put(0x20)
            put(decimal: UInt64(max(bytes, 0))); put(0x42); put(0x20)
            put(decimal: micros / 1000); put(0x2E); put(decimal: micros % 1000, minimumDigits: 3)
            put("ms conn="); put(decimal: connectionID)
            if note != nil { put(0x20) }
            return i
        }
        note?.append(to: &line)
        return line
    }
}
