#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPCore
import Locking

/// The `Date: ...\r\n` header line, formatted at most once per second and shared by all connections.
///
/// Thread-safety: the cached (second, bytes) pair lives in a `Locked`; readers copy the array
/// (reference-counted, no byte copy).
final class DateHeaderCache: Sendable {
    static let shared = DateHeaderCache()
    private let cache = Locked<(second: Int, line: [UInt8])>((-1, []))

    func headerLine() -> [UInt8] {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME_COARSE, &ts)
        let now = Int(ts.tv_sec)
        return cache.withLock { c in
            if c.second != now {
                c = (now, Array("Date: \(HTTPDate.format(now))\r\n".utf8))
            }
            return c.line
        }
    }
}
