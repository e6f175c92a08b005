import DictionaryCodec
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Shows a ``TrainingProgress`` on stderr while a run is under way.
///
/// On a terminal: a bar repainted in place four times a second with the stage, percentage, elapsed
/// time and estimated time left. Otherwise (pipes, CI logs): one plain line when a stage starts and
/// every 10 seconds. Owns a timer on its own dispatch queue; ``stop()`` ends it and prints the final
/// line. Thread-safe through the progress object's own lock and the serial queue.
final class TrainProgressReporter: @unchecked Sendable {
    enum Style: String { case auto, bar, lines, none }

    private let progress: TrainingProgress
    private let style: Style
    private let queue = DispatchQueue(label: "dcserve.train.progress")
    private var timer: DispatchSourceTimer?
    private var lastStage = ""
    private var lastLine = Date.distantPast

    init(progress: TrainingProgress, style: Style) {
        self.progress = progress
        self.style = style == .auto ? (isatty(2) != 0 ? .bar : .lines) : style
    }

    func start() {
        guard style != .none else { return }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now(), repeating: style == .bar ? 0.25 : 1.0)
        timer.setEventHandler { [self] in tick() }
        timer.resume()
        self.timer = timer
    }

    func stop() {
        guard let timer else { return }
        queue.sync {
            timer.cancel()
            let s = progress.snapshot()
            if style == .bar { write("\r\u{1B}[2K" + barLine(s) + "\n") } else {
                write("train: done in \(Self.duration(s.elapsed))\n")
            }
        }
        self.timer = nil
    }

    private func tick() {
        let s = progress.snapshot()
        switch style {
        case .bar:
            write("\r\u{1B}[2K" + barLine(s))
        case .lines:
            if s.stage != lastStage || Date().timeIntervalSince(lastLine) >= 10 {
                lastStage = s.stage
                lastLine = Date()
                write("train: [\(s.stageIndex)/\(s.stageCount)] \(s.stage) \(Int(s.fraction * 100))% "
                    + "elapsed \(Self.duration(s.elapsed))" + (s.remaining.map { " eta \(Self.duration($0))" } ?? "") + "\n")
            }
        case .auto, .none: break
        }
    }

    private func barLine(_ s: TrainingProgress.Snapshot) -> String {
        let width = 30
        let filled = Int((s.fraction * Double(width)).rounded(.down))
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        let eta = s.finished ? "done" : (s.remaining.map { "eta \(Self.duration($0))" } ?? "eta ?")
        return "\(bar) \(String(format: "%3d", Int(s.fraction * 100)))%  \(s.stage) [\(s.stageIndex)/\(s.stageCount)]  "
            + "\(Self.duration(s.elapsed)) elapsed, \(eta)"
    }

    private func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    static func duration(_ seconds: TimeInterval) -> String {
        let total = Int(seconds.rounded())
        return total >= 60 ? "\(total / 60)m\(String(format: "%02d", total % 60))s" : String(format: "%.1fs", seconds)
    }
}
