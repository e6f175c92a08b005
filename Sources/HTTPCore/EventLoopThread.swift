#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Dispatch

/// The thread of an ``EventLoop``: waits in `epoll_wait` on the loop's set and serves each round on
/// the loop's queue (`queue.sync`), until the loop's core is stopped (by the handle's `deinit`).
///
/// Ownership: the thread holds the core strongly, never the handle, so it does not keep the loop
/// alive; it releases the core when it ends (the core then closes the epoll set and frees the event
/// buffer once the last of its holders is gone).
enum EventLoopThread {
    /// What the new thread starts with (passed through `pthread_create`'s argument, retained once).
    private final class Start {
        let core: EventLoopCore
        let name: String
        init(core: EventLoopCore, name: String) { (self.core, self.name) = (core, name) }
    }

    /// Starts the thread (detached) and returns its id, known before the thread runs any code of
    /// the loop.
    static func start(_ core: EventLoopCore, name: String) -> pthread_t {
        let start = Unmanaged.passRetained(Start(core: core, name: name)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { argument in
            let start = Unmanaged<Start>.fromOpaque(argument!).takeRetainedValue()
            EventLoopThread.run(start.core, name: start.name)
            return nil
        }, start)
        precondition(result == 0, "pthread_create failed: \(result)")
        pthread_detach(thread)
        return thread
    }

    /// What one round serves: set by the thread before it enters the queue, read after.
    private final class Round: @unchecked Sendable {  // used by the loop's thread only
        var count = 0
        /// The round left work: poll, do not block.
        var more = false
    }

    private static func run(_ core: EventLoopCore, name: String) {
        dcserve_set_thread_name(name)
        // One work item for every round: `queue.sync` with a closure boxes it (a heap allocation per
        // round); a work item's block is made once and may run any number of times (it is never waited on).
        let round = Round()
        let item = DispatchWorkItem { round.more = core.runRound(round.count) }
        let capacity = Int32(EventLoopCore.batchSize)
        var count: Int32 = 0
        // The first round (no events) runs what was queued before the thread started, and marks the
        // task list asleep.
        while !core.isStopped {
            round.count = Int(count)
            core.queue.sync(execute: item)
            count = epoll_wait(core.epollDescriptor, core.events, capacity, round.more ? 0 : -1)
            if count < 0 {
                precondition(errno == EINTR, "epoll_wait failed: errno \(errno)")
                count = 0
            }
        }
    }
}
