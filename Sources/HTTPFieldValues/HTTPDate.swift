/// IMF-fixdate formatting and parsing (RFC 9110 §5.6.7), e.g. "Sun, 06 Nov 1994 08:49:37 GMT".
/// Pure Swift (no C library calls), so the client builds on every platform; thread-safe.
public enum HTTPDate {
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Formats seconds since the Unix epoch (proleptic Gregorian calendar, UTC).
    public static func format(_ seconds: Int) -> String {
        let days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400
        let secondOfDay = seconds - days * 86400
        // Civil from days (Howard Hinnant's algorithm), the inverse of `parse`'s.
        let z = days + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        let weekday = ((days % 7) + 11) % 7  // 1970-01-01 was a Thursday (4)
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(Self.days[weekday]), \(two(day)) \(months[month - 1]) \(year) "
            + "\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) GMT"
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
