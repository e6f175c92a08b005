import Dispatch
import Foundation
import Logging

/// SIGTERM/SIGINT through DispatchSource signal sources: the first one calls `onSignal` (the
/// graceful shutdown); later ones are ignored. Process-wide: install once.
enum ShutdownSignals {
    nonisolated(unsafe) private static var sources: [DispatchSourceSignal] = []

    static func install(logger: Logger, onSignal: @escaping @Sendable () -> Void) {
        let queue = DispatchQueue(label: "dcserve.signals")
        let fired = OnceGate()
        for sig in [SIGTERM, SIGINT] {
            signal(sig, SIG_IGN)  // let the dispatch source see it instead of the default action
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler {
                guard fired.pass() else { return }
                logger.info("shutting down", metadata: ["signal": "\(sig == SIGTERM ? "SIGTERM" : "SIGINT")"])
                onSignal()
            }
            source.resume()
            sources.append(source)
        }
    }
}

/// Lets exactly one caller through. Only touched on the signal queue, so the plain Bool is safe.
final class OnceGate: @unchecked Sendable {
    private var passed = false
    func pass() -> Bool { if passed { return false }; passed = true; return true }
}
