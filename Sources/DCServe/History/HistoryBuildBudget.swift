import Foundation

/// Build time allowed per minute (one history rule): builds are scheduled only while the time spent
/// in the current minute is below the allowance; a build that overshoots just ends the minute's
/// allowance early. A value type, kept under its owner's lock; the clock is passed in (testable).
struct HistoryBuildBudget: Sendable {
    let allowance: Duration
    private var windowStart: Date?
    private var spent: Duration = .zero

    init(millisecondsPerMinute: Int) { allowance = .milliseconds(millisecondsPerMinute) }

    /// Whether a build may start at `now`.
    mutating func allows(at now: Date) -> Bool {
        roll(now)
        return spent < allowance
    }

    /// Charges a build that finished at `now` and took `duration`.
    mutating func charge(_ duration: Duration, at now: Date) {
        roll(now)
        spent += duration
    }

    private mutating func roll(_ now: Date) {
        if let start = windowStart, now.timeIntervalSince(start) < 60, now >= start { return }
        windowStart = now
        spent = .zero
    }
}
