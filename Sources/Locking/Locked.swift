#if DCSERVE_TSAN_LOCKS
import Foundation

/// The one lock of dcserve: a value reachable only while its lock is held (`withLock`), with the API
/// of `Synchronization.Mutex`.
///
/// This is the ThreadSanitizer build's form (the package built with `DCSERVE_TSAN_LOCKS=1` in the
/// environment, which defines `DCSERVE_TSAN_LOCKS` for this module): an `NSLock`, a pthread mutex
/// whose lock and unlock TSan intercepts, so it sees the happens-before edge between two critical
/// sections. `Synchronization.Mutex` locks with futexes inside the uninstrumented Swift runtime on
/// Linux, so TSan reports every contended `withLock` of it as a race. Costs one allocation per
/// instance, which the ordinary build (`Mutex`, stored inline) does not.
///
/// Thread-safety: the value is only reachable inside `withLock`/`withLockIfAvailable`, which hold the
/// lock for the whole closure; not re-entrant.
public final class Locked<Value: ~Copyable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    public init(_ initialValue: consuming sending Value) { value = initialValue }

    public borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    public borrowing func withLockIfAvailable<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result? {
        guard lock.try() else { return nil }
        defer { lock.unlock() }
        return try body(&value)
    }
}
#else
import Synchronization

/// The one lock of dcserve: a value reachable only while its lock is held (`withLock`).
///
/// In ordinary builds this is `Synchronization.Mutex` itself (stored inline, no allocation, a futex
/// on Linux). The ThreadSanitizer build (`DCSERVE_TSAN_LOCKS=1` in the environment) swaps in an
/// `NSLock`-based class with the same API, because TSan does not see `Mutex`'s futex-based locking
/// on Linux and would report every contended critical section as a race.
public typealias Locked<Value: ~Copyable> = Mutex<Value>
#endif
