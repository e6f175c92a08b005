import CLinux
import Dispatch
import DictionaryTransport
import Foundation
import Logging
import Locking

/// Returns memory to the system when traffic stops: every `interval` it reads the process's CPU time
/// (no per-request bookkeeping); once an interval used less than `idleShare` of one core after a busy
/// one, it runs `release` (the application drops what is cheap to make again), asks the store to drop
/// its caches and glibc to give back the free memory of every malloc arena (`malloc_trim(0)`) — once
/// per idle period; while it lasts, the store's caches again whenever resident memory grew by
/// ``regrowth`` since (the store's housekeeping reads refill them). Under traffic, once an interval
/// ends with the resident memory above `trimAbove` (the memory budget), glibc is asked to give back
/// its arenas' free pages too.
///
/// Thread-safety: its timer runs on its own queue; `cancel()` may be called from any thread.
final class IdleMemoryRelease: @unchecked Sendable {  // the timer is only resumed and cancelled
    private let timer: DispatchSourceTimer
    private let queue = DispatchQueue(label: "dcserve.idle-memory-release", qos: .background)

    private struct State {
        var lastCPU: Double
        var released = true
        /// Resident bytes right after the last release (idle work such as housekeeping may fill caches again).
        var residentAfterRelease = Int.max
    }

    init(store: any DictionaryStore, interval: Double = 10, idleShare: Double = 0.01, trimAbove: Int = .max,
         logger: Logger, release: @escaping @Sendable () -> Void = {}) {
        let state = Locked(State(lastCPU: Self.processCPUSeconds()))
        let drop = release
        timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler {
            let cpu = Self.processCPUSeconds()
            enum Action { case none, release, releaseStore }
            let resident = ProcessMemory.residentBytes()
            let action: Action = state.withLock { s in
                defer { s.lastCPU = cpu }
                if cpu - s.lastCPU > interval * idleShare {
                    s.released = false
                    return .none
                }
                if !s.released {
                    s.released = true
                    return .release
                }
                // `residentAfterRelease` is Int.max until the first release: compare without adding to it.
                return resident - Self.regrowth > s.residentAfterRelease ? .releaseStore : .none
            }
            switch action {
            case .none:
                if resident > trimAbove { _ = dcserve_malloc_trim() }
                return
            case .release:
                drop()
                store.releaseMemory()
                _ = dcserve_malloc_trim()
                logger.debug("idle: memory returned to the system")
            case .releaseStore:
                store.releaseMemory()
                _ = dcserve_malloc_trim()
            }
            let after = ProcessMemory.residentBytes()
            state.withLock { $0.residentAfterRelease = after }
        }
        timer.resume()
    }

    /// Growth of resident memory during an idle period (housekeeping refilling the store's caches) that
    /// makes the store's caches and the allocator's free pages be released again.
    static let regrowth = 1 << 20

    func cancel() { timer.cancel() }

    /// CPU time used by the process so far (all threads), seconds.
    static func processCPUSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
