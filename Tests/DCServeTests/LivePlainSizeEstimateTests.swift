@testable import DCServe
import DictionaryCodec
import Testing

/// The plain size of live responses ("bytes saved" baseline) estimated from a sample per (rule, coding).
@Suite struct LivePlainSizeEstimateTests {
    let key = LivePlainSizeEstimate.Key(rule: "feed", coding: .br)

    @Test func everyResponseIsMeasuredUntilOneMeasurementIsIn() {
        let estimate = LivePlainSizeEstimate(interval: .seconds(60))
        let start = ContinuousClock.now
        for _ in 0..<3 {
            let unknown = estimate.estimate(key, identity: 50_000, now: start)
            #expect(unknown.size == nil && unknown.measure)
        }
        estimate.record(key, identity: 50_000, plain: 10_000, now: start)
        let next = estimate.estimate(key, identity: 60_000, now: start + .seconds(1))
        #expect(next.size == 12_000 && !next.measure)
        // Another rule or coding has its own ratio.
        #expect(estimate.estimate(.init(rule: "feed", coding: .zstd), identity: 60_000, now: start).size == nil)
        #expect(estimate.estimate(.init(rule: "other", coding: .br), identity: 60_000, now: start).size == nil)
    }

    @Test func aMeasurementIsAskedForOncePerIntervalOneAtATime() {
        let estimate = LivePlainSizeEstimate(interval: .seconds(1))
        let start = ContinuousClock.now
        estimate.record(key, identity: 1000, plain: 500, now: start)
        #expect(!estimate.estimate(key, identity: 1000, now: start + .milliseconds(999)).measure)
        let due = estimate.estimate(key, identity: 1000, now: start + .seconds(1))
        #expect(due.measure && due.size == 500)
        // While it runs, no second one, however late.
        #expect(!estimate.estimate(key, identity: 1000, now: start + .seconds(5)).measure)
        estimate.record(key, identity: 1000, plain: 250, now: start + .seconds(1))
        #expect(estimate.estimate(key, identity: 2000, now: start + .seconds(1)).size == 500)
        #expect(estimate.estimate(key, identity: 2000, now: start + .seconds(2)).measure)
    }

    @Test func aFailedMeasurementKeepsTheLastRatio() {
        let estimate = LivePlainSizeEstimate(interval: .zero)
        estimate.record(key, identity: 1000, plain: 300)
        #expect(estimate.estimate(key, identity: 1000).measure)
        estimate.record(key, identity: 1000, plain: nil)
        #expect(estimate.estimate(key, identity: 1000).size == 300)
    }
}
