import Foundation
import Locking

/// Progress of a long training or evaluation run, shared between the worker that advances it and a
/// reporter that polls it (a progress bar repainting on a timer while a ZDICT call blocks).
///
/// The worker announces the planned stages with an estimated cost in seconds, then calls
/// ``begin(_:)`` / ``advance(to:)`` / ``end()``. ``snapshot()`` returns the weighted fraction done,
/// the elapsed time and an estimate of the time left: a stage that reports no fraction of its own is
/// assumed to advance with elapsed time against its estimate (capped at 95 %), and the estimate for
/// the rest is scaled by how long finished stages really took compared with their estimates.
///
/// Thread-safety: all state is behind a `Locked`; any thread may call any method.
public final class TrainingProgress: Sendable {
    /// What a reporter shows.
    public struct Snapshot: Sendable {
        public var stage: String
        public var stageIndex: Int
        public var stageCount: Int
        /// 0...1, weighted by the stages' estimated costs.
        public var fraction: Double
        public var elapsed: TimeInterval
        /// nil until there is something to extrapolate from.
        public var remaining: TimeInterval?
        public var finished: Bool
    }

    private struct Stage {
        var name: String
        var estimate: Double
        var started: Date?
        var ended: Date?
        var fraction: Double?
    }

    private struct State {
        var stages: [Stage] = []
        var current: Int?
        var finished = false
    }

    private let start: Date
    private let state = Locked(State())

    public init(start: Date = Date()) { self.start = start }

    /// Adds a stage to the plan with its estimated cost in seconds (any positive scale works).
    public func plan(_ name: String, estimatedSeconds: Double) {
        state.withLock { $0.stages.append(Stage(name: name, estimate: max(0.001, estimatedSeconds))) }
    }

    /// Starts the planned stage called `name` (adding it to the plan if it was not planned).
    public func begin(_ name: String) {
        state.withLock { s in
            if let current = s.current, s.stages[current].ended == nil { s.stages[current].ended = Date() }
            if let i = s.stages.firstIndex(where: { $0.name == name && $0.started == nil }) {
                s.stages[i].started = Date()
                s.current = i
            } else {
                s.stages.append(Stage(name: name, estimate: 0.001, started: Date()))
                s.current = s.stages.count - 1
            }
        }
    }

    /// Reports the current stage's own fraction done (0...1).
    public func advance(to fraction: Double) {
        state.withLock { s in
            guard let i = s.current else { return }
            s.stages[i].fraction = min(1, max(0, fraction))
        }
    }

    /// Ends the current stage.
    public func end() {
        state.withLock { s in
            guard let i = s.current else { return }
            s.stages[i].ended = Date()
            s.stages[i].fraction = 1
        }
    }

    /// Marks the whole run finished.
    public func finish() {
        state.withLock { s in
            if let i = s.current, s.stages[i].ended == nil { s.stages[i].ended = Date(); s.stages[i].fraction = 1 }
            s.finished = true
        }
    }

    public func snapshot(now: Date = Date()) -> Snapshot {
        state.withLock { s in
            let total = s.stages.reduce(0) { $0 + $1.estimate }
            var doneEstimate = 0.0, doneActual = 0.0, weighted = 0.0
            for stage in s.stages {
                guard let started = stage.started else { continue }
                if let ended = stage.ended {
                    doneEstimate += stage.estimate
                    doneActual += ended.timeIntervalSince(started)
                    weighted += stage.estimate
                } else {
                    let own = stage.fraction ?? min(0.95, now.timeIntervalSince(started) / stage.estimate)
                    weighted += stage.estimate * own
                }
            }
            let fraction = s.finished ? 1 : (total > 0 ? min(1, weighted / total) : 0)
            let elapsed = now.timeIntervalSince(start)
            var remaining: TimeInterval?
            if s.finished {
                remaining = 0
            } else if total > 0 {
                // Scale the estimate of what is left by how fast finished stages really were.
                let speed = doneEstimate > 0.5 ? doneActual / doneEstimate : 1
                remaining = max(0, (total - weighted) * speed)
            }
            let current = s.current ?? 0
            return Snapshot(
                stage: s.current == nil ? "starting" : s.stages[current].name,
                stageIndex: s.stages.count { $0.started != nil },
                stageCount: s.stages.count, fraction: fraction, elapsed: elapsed, remaining: remaining,
                finished: s.finished)
        }
    }
}
