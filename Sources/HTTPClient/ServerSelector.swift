import Dispatch
import Locking

/// Round robin over an upstream's servers, skipping servers that failed recently.
///
/// Thread-safety: one `Locked`; shared by every event loop of a client.
final class ServerSelector: Sendable {
    let servers: [UpstreamServer]
    private let backoffNanoseconds: UInt64
    private struct State {
        var next = 0
        /// Uptime (ns) until which server i is skipped; 0 = healthy.
        var downUntil: [UInt64]
    }
    private let state: Locked<State>

    init(servers: [UpstreamServer], failureBackoff: Duration) {
        self.servers = servers
        let (s, a) = failureBackoff.components
        backoffNanoseconds = UInt64(max(0, s)) * 1_000_000_000 + UInt64(max(0, a / 1_000_000_000))
        state = Locked(State(downUntil: Array(repeating: 0, count: servers.count)))
    }

    /// The next server in turn that is not backed off and not in `excluding`; when all of them are
    /// backed off, the next one not excluded anyway (better a try than a certain failure). Nil when
    /// every server is excluded.
    func next(excluding: Set<UpstreamServer> = []) -> UpstreamServer? {
        guard !servers.isEmpty else { return nil }
        // One server: it is the answer whether backed off or not (no lock, no clock).
        if servers.count == 1 { return excluding.contains(servers[0]) ? nil : servers[0] }
        let now = DispatchTime.now().uptimeNanoseconds
        return state.withLock { state in
            var fallback: Int?
            for step in 0..<servers.count {
                let i = (state.next + step) % servers.count
                guard !excluding.contains(servers[i]) else { continue }
                if state.downUntil[i] <= now {
                    state.next = i + 1
                    return servers[i]
                }
                if fallback == nil { fallback = i }
            }
            guard let i = fallback else { return nil }
            state.next = i + 1
            return servers[i]
        }
    }

    /// Skips `server` for the backoff period.
    func markFailed(_ server: UpstreamServer) {
        let until = DispatchTime.now().uptimeNanoseconds + backoffNanoseconds
        state.withLock { state in
            for i in servers.indices where servers[i] == server { state.downUntil[i] = until }
        }
    }

    /// `server` answered: stop skipping it.
    func markHealthy(_ server: UpstreamServer) {
        state.withLock { state in
            for i in servers.indices where servers[i] == server && state.downUntil[i] != 0 { state.downUntil[i] = 0 }
        }
    }
}
