import Synchronization

/// Counts the tunnels made by ``ByteTunnel`` and the bytes they carried (for metrics and tests).
/// Direction `a` is from the tunnel's first end to its second, `b` the other way.
/// Thread-safety: atomics only.
public final class ByteTunnelCounters: Sendable {
    private let openedCount = Atomic<Int>(0)
    private let closedCount = Atomic<Int>(0)
    private let bytesA = Atomic<Int>(0)
    private let bytesB = Atomic<Int>(0)

    public init() {}

    /// Tunnels started.
    public var opened: Int { openedCount.load(ordering: .relaxed) }
    /// Tunnels ended (both sockets closed).
    public var closed: Int { closedCount.load(ordering: .relaxed) }
    /// Tunnels open now.
    public var open: Int { max(0, opened - closed) }
    /// Bytes written to the second end (read from the first).
    public var bytesFromFirst: Int { bytesA.load(ordering: .relaxed) }
    /// Bytes written to the first end (read from the second).
    public var bytesFromSecond: Int { bytesB.load(ordering: .relaxed) }

    func recordOpened() { openedCount.add(1, ordering: .relaxed) }
    func recordClosed() { closedCount.add(1, ordering: .relaxed) }
    func record(bytes: Int, fromFirst: Bool) {
        if fromFirst { bytesA.add(bytes, ordering: .relaxed) } else { bytesB.add(bytes, ordering: .relaxed) }
    }
}
