#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPCore

/// The `Date: ...\r\n` header line, formatted at most once per second per thread.
///
/// Thread-safety: each thread (an event loop's, in the server) keeps its own line in thread-local
/// storage, so writing a response takes no lock and shares no cache line with the other loops. A
/// thread's line is released when the thread ends.
enum DateHeaderCache {
    /// One thread's line and the second it was formatted for. Owned by its thread only.
    private final class Line {
        var second = -1
        var bytes: [UInt8] = []
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key) { pointer in
            if let pointer { Unmanaged<AnyObject>.fromOpaque(pointer).release() }
        }
        precondition(status == 0, "pthread_key_create failed")
        return key
    }()

    /// Appends the current `Date` line to `buffer`.
    static func appendLine(into buffer: inout [UInt8]) {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME_COARSE, &ts)
        let now = Int(ts.tv_sec)
        let line: Line
        if let stored = pthread_getspecific(key) {
            line = Unmanaged<Line>.fromOpaque(stored).takeUnretainedValue()
        } else {
            line = Line()
            pthread_setspecific(key, Unmanaged.passRetained(line).toOpaque())
        }
        if line.second != now {
            line.second = now
            line.bytes = Array("Date: \(HTTPDate.format(now))\r\n".utf8)
        }
        buffer.append(contentsOf: line.bytes)
    }
}
