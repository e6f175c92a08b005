import Dispatch
import Locking

/// Runs `operation` in a new task and blocks the calling thread until it finishes or `timeout`
/// passes (then the task is cancelled and ``DictionaryStorePostgresError`` "timed out" thrown).
///
/// For the synchronous ``DictionaryTransport/DictionaryStore`` methods, which are called from
/// dcserve's event-loop and housekeeping threads (Dispatch, never the Swift concurrency pool): the
/// awaited work runs on the concurrency pool and NIO's threads, which the caller never blocks.
/// Must not be called from a Swift concurrency task.
@discardableResult
func blockingAwait<T: Sendable>(timeout seconds: Double, what: String,
                                _ operation: @escaping @Sendable () async throws -> T) throws -> T {
    let outcome = Locked<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    let task = Task {
        let result: Result<T, any Error>
        do { result = .success(try await operation()) } catch { result = .failure(error) }
        outcome.withLock { $0 = result }
        done.signal()
    }
    if done.wait(timeout: .now() + seconds) == .timedOut {
        task.cancel()
        throw DictionaryStorePostgresError("PostgreSQL \(what) timed out after \(seconds) s")
    }
    return try outcome.withLock { $0! }.get()
}
