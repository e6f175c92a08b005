#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import ByteTransportTesting
import Logging
@testable import HTTPServer

/// Connections over in-memory transports, all on one server context with one event loop.
final class ConnectionHarness: Sendable {
    let context: ServerContext

    init(handler: some HTTPHandler, configure: (inout ServerConfiguration) -> Void = { _ in }) {
        var configuration = ServerConfiguration()
        configuration.eventLoopCount = 1
        configure(&configuration)
        var logger = Logger(label: "dcserve.test.access")
        logger.logLevel = .critical
        context = ServerContext(configuration: configuration, handler: handler, accessLog: AccessLog(logger: logger))
    }

    /// A started connection over `transport` (it joins the loop asynchronously).
    func connect(_ transport: InMemoryTransport = InMemoryTransport()) -> Connection {
        let connection = Connection(id: context.makeConnectionID(), transport: transport, remoteAddress: "127.0.0.1",
                                    context: context)
        precondition(context.registry.add(connection))
        connection.start()
        return connection
    }

    /// Runs `body` on `connection`'s loop queue and returns its result: the test's way to act as the
    /// loop (a deadline sweep at a chosen time) without racing it.
    func onLoop<T: Sendable>(_ connection: Connection, _ body: @Sendable () -> T) -> T { connection.queue.sync(execute: body) }

    /// Waits until no connection is left (all closed); returns whether that happened.
    func waitUntilAllClosed(seconds: Double = 10) -> Bool {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
        while context.registry.count > 0 {
            if DispatchTime.now().uptimeNanoseconds > deadline { return false }
            usleep(1000)
        }
        return true
    }
}
