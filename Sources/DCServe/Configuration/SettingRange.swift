/// The ranges every duration and size setting must fall in, wherever it came from (file,
/// environment, command line), so nonsense (`1e300`, `inf`, `nan`, `Int.max`, negative sizes) is
/// refused with the key's name instead of trapping later in arithmetic or a `Duration` conversion.
/// Durations are seconds as `Double`; within range they convert to `Duration` exactly enough and
/// without overflow (one year is 3.2e16 ns, far below `Int64.max`).
public enum SettingRange {
    /// Longest duration any setting accepts: one year.
    public static let maxSeconds: Double = 31_536_000
    /// Shortest positive duration: one millisecond (shorter would round to an immediate timeout).
    public static let minPositiveSeconds: Double = 0.001
    /// Largest byte size any setting accepts: 1 TiB.
    public static let maxBytes = 1 << 40
    /// Longest ages in whole seconds (`maxAge`, retention): ten years.
    public static let maxAgeSeconds = 315_360_000

    /// Throws unless `seconds` is finite and within `minPositiveSeconds…maxSeconds` (or exactly 0
    /// when `zeroAllowed`).
    public static func checkSeconds(_ seconds: Double, key: String, zeroAllowed: Bool = false) throws {
        let ok = seconds.isFinite && seconds <= maxSeconds
            && (seconds >= minPositiveSeconds || (zeroAllowed && seconds == 0))
        guard ok else {
            throw ConfigurationError(key: key, "must be a number of seconds from \(zeroAllowed ? "0" : "0.001") to \(Int(maxSeconds)) (one year), not \(seconds)")
        }
    }

    /// Throws unless `value` is in `range`; `what` names the unit ("bytes", "connections", …).
    public static func check(_ value: Int, in range: ClosedRange<Int>, key: String, _ what: String) throws {
        guard range.contains(value) else {
            throw ConfigurationError(key: key, "must be \(range.lowerBound)…\(range.upperBound) \(what), not \(value)")
        }
    }
}

extension Duration {
    /// `seconds` of a validated setting as a `Duration`. Never traps: values outside
    /// `0…SettingRange.maxSeconds` (and NaN) are clamped into it, so call `SettingRange.checkSeconds`
    /// first to refuse them instead.
    public static func configured(seconds: Double) -> Duration {
        let clamped = seconds.isNaN ? 0 : min(max(seconds, 0), SettingRange.maxSeconds)
        return .nanoseconds(Int64((clamped * 1e9).rounded()))
    }
}
