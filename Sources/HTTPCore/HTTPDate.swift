#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// IMF-fixdate formatting and parsing (RFC 9110 §5.6.7), e.g. "Sun, 06 Nov 1994 08:49:37 GMT".
public enum HTTPDate {
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Formats seconds since the Unix epoch.
    public static func format(_ seconds: Int) -> String {
        var t = time_t(seconds)
        var tm = tm()
        gmtime_r(&t, &tm)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(days[Int(tm.tm_wday)]), \(two(tm.tm_mday)) \(months[Int(tm.tm_mon)]) \(tm.tm_year + 1900) "
            + "\(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec)) GMT"
    }

    /// Parses an IMF-fixdate; returns seconds since the epoch, or nil when it is not one
    /// (obsolete formats are not accepted; callers then ignore the field, as RFC 9110 allows).
    public static func parse(_ text: String) -> Int? {
        let b = Array(text.utf8)
        guard b.count == 29, b[3] == 0x2C, b[4] == 0x20, b[7] == 0x20, b[11] == 0x20, b[16] == 0x20,
              b[19] == 0x3A, b[22] == 0x3A, b[25] == 0x20,
              String(decoding: b[26..<29], as: UTF8.self) == "GMT" else { return nil }
        func num(_ r: Range<Int>) -> Int? {
            var v = 0
            for i in r { guard b[i] >= 0x30 && b[i] <= 0x39 else { return nil }; v = v * 10 + Int(b[i] - 0x30) }
            return v
        }
        guard let day = num(5..<7), let year = num(12..<16), let hour = num(17..<19), let minute = num(20..<22),
              let second = num(23..<25),
              let month = months.firstIndex(of: String(decoding: b[8..<11], as: UTF8.self)),
              day >= 1, day <= 31, hour < 24, minute < 60, second < 61 else { return nil }
        // Days from civil (Howard Hinnant's algorithm).
        let y = month < 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let m = month + 1
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let daysSinceEpoch = era * 146097 + doe - 719468
        return daysSinceEpoch * 86400 + hour * 3600 + minute * 60 + second
    }
}
