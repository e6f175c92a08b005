import Dispatch
import Foundation
import HTTPCore
import Logging

/// SIGTERM/SIGINT through DispatchSource signal sources: the first one calls `onSignal` (the
/// graceful shutdown); later ones are ignored. Process-wide: install once.
enum ShutdownSignals {
    nonisolated(unsafe) private static var sources: [DispatchSourceSignal] = []

    static func install(logger: Logger, onSignal: @escaping @Sendable () -> Void) {
        let queue = DispatchQueue(label: "dcserve.signals")
        let fired = OnceFlag()
        for sig in [SIGTERM, SIGINT] {
            signal(sig, SIG_IGN)  // let the dispatch source see it instead of the default action
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler {
                guard fired.set() else { return }
                logger.info("shutting down", metadata: ["signal": "\(sig == SIGTERM ? "SIGTERM" : "SIGINT")"])
                onSignal()
            }
            source.resume()
            sources.append(source)
        }
    }
}
