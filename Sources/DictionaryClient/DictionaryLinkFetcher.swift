import DictionaryTransportFields
import Locking
/// Fetches a dictionary announced by `Link: rel="compression-dictionary"`: implemented by the
/// transport adapter, which sends a GET for `target` (prepared with ``DictionaryClient/prepare(url:destination:partition:fields:)``
/// like any request) and hands the response to ``DictionaryClient/process(_:for:)``, which registers it.
public protocol DictionaryLinkFetcher: Sendable {
    func fetchDictionary(_ target: ClientRequestTarget, partition: String) async throws
}

/// Runs link fetches in the background, bounded: at most `maxPending` fetches queued or running and
/// `maxConcurrent` running at a time; a URL already queued for the same partition is not queued twice;
/// what does not fit is dropped (the server will announce it again). Failures are counted, never
/// retried. Thread-safe.
public final class DictionaryLinkQueue: Sendable {
    public let fetcher: any DictionaryLinkFetcher
    public let maxPending: Int
    public let maxConcurrent: Int

    private struct Key: Hashable { let partition: String; let target: ClientRequestTarget }
    private struct State {
        var pending: [Key] = []
        var running: Set<Key> = []
        var dropped = 0
        var failed = 0
        var completed = 0
    }
    private let state = Locked(State())

    public init(fetcher: any DictionaryLinkFetcher, maxPending: Int = 8, maxConcurrent: Int = 2) {
        self.fetcher = fetcher
        self.maxPending = max(1, maxPending)
        self.maxConcurrent = max(1, maxConcurrent)
    }

    /// Queues a fetch; returns false when it was dropped (queue full) or is already queued.
    @discardableResult
    public func enqueue(_ target: ClientRequestTarget, partition: String) -> Bool {
        let key = Key(partition: partition, target: target)
        let accepted = state.withLock { s -> Bool in
            if s.pending.contains(key) || s.running.contains(key) { return false }
            guard s.pending.count + s.running.count < maxPending else { s.dropped += 1; return false }
            s.pending.append(key)
            return true
        }
        if accepted { startNext() }
        return accepted
    }

    /// (completed, failed, dropped) so far.
    public var counts: (completed: Int, failed: Int, dropped: Int) {
        state.withLock { ($0.completed, $0.failed, $0.dropped) }
    }

    /// Waits until nothing is queued or running (bounded by the fetches themselves).
    public func drain() async {
        while state.withLock({ !$0.pending.isEmpty || !$0.running.isEmpty }) {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    private func startNext() {
        let next = state.withLock { s -> Key? in
            guard s.running.count < maxConcurrent, !s.pending.isEmpty else { return nil }
            let key = s.pending.removeFirst()
            s.running.insert(key)
            return key
        }
        guard let next else { return }
        let fetcher = self.fetcher
        Task.detached { [self] in
            var ok = true
            do { try await fetcher.fetchDictionary(next.target, partition: next.partition) } catch { ok = false }
            state.withLock { s in
                s.running.remove(next)
                if ok { s.completed += 1 } else { s.failed += 1 }
            }
            startNext()
        }
    }
}
