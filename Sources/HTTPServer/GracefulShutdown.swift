import Dispatch
import HTTPCore

/// Graceful shutdown: stop accepting, let in-flight requests finish (their responses carry
/// `Connection: close`), close idle keep-alive connections at once, and force-close whatever is left
/// when the deadline passes. `completion(forced)` runs exactly once.
struct GracefulShutdown {
    let registry: ConnectionRegistry
    let listeners: [Listener]

    func run(deadline: Duration, completion: @escaping @Sendable (_ forced: Bool) -> Void) {
        for l in listeners { l.stop() }
        let done = OnceFlag()
        let finishOnce: @Sendable (Bool) -> Void = { forced in
            guard done.set() else { return }
            completion(forced)
        }
        let registry = self.registry
        for c in registry.all { c.beginShutdown() }
        registry.whenEmpty { finishOnce(false) }
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(deadline.nanoseconds))) {
            let left = registry.all
            if left.isEmpty { finishOnce(false); return }
            for c in left { c.forceClose() }
            // Give the forced closes a moment to run their cancel handlers, then report.
            registry.whenEmpty { finishOnce(true) }
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(500)) { finishOnce(true) }
        }
    }
}
