import Synchronization

/// A flag that is set once and never cleared: the one way this package lets exactly one caller through
/// (a shutdown signal, a completion that several paths may report, a stop request).
///
/// Thread-safety: an atomic; any thread may call ``set()`` and read ``isSet``. Setting releases what the
/// setter wrote before, reading `true` acquires it.
public final class OnceFlag: Sendable {
    private let flag = Atomic<Bool>(false)

    public init() {}

    /// Sets the flag; true for the one caller that set it, false for every later one.
    public func set() -> Bool { !flag.exchange(true, ordering: .acquiringAndReleasing) }

    /// Whether the flag has been set.
    public var isSet: Bool { flag.load(ordering: .acquiring) }
}
