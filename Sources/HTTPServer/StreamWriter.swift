import Synchronization

/// The `ResponseBodyWriter` handed to stream producers; forwards to its connection's event loop
/// (`EventLoop.execute`: in order, at the end of the loop's current round).
/// Thread-safety: immutable references plus an atomic `cancelled` flag.
final class StreamWriter: ResponseBodyWriter, @unchecked Sendable {
    private let connection: Connection
    let chunked: Bool
    let cancelled = Atomic<Bool>(false)

    init(connection: Connection, chunked: Bool) {
        self.connection = connection
        self.chunked = chunked
    }

    var isCancelled: Bool { cancelled.load(ordering: .relaxed) }

    func write(_ chunk: [UInt8], then: @escaping @Sendable () -> Void) {
        if isCancelled { then(); return }
        connection.loop.execute { self.connection.streamWrite(self, chunk, then: then) }
    }

    func finish() { connection.loop.execute { self.connection.streamFinish(self) } }

    func abort() { connection.loop.execute { self.connection.streamAbort(self) } }
}
