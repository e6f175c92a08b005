extension Duration {
    /// Whole nanoseconds, clamped to 0...Int.max (negative durations are 0, huge ones Int.max), for
    /// Dispatch deadlines and kernel timeouts. Internal to HTTPCore.
    var clampedNanoseconds: Int {
        let (seconds, attoseconds) = components
        if seconds < 0 { return 0 }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return Int.max }
        let (total, overflow2) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflow2 ? Int.max : Int(total)
    }
}
