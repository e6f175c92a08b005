#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import HTTPCore

/// A listening socket and its accept loop.
///
/// Thread-safety: `source` and `closed` are touched only on `queue` (the accept source's queue) after
/// `start()`; `descriptor` and `address` are immutable. Hence `@unchecked Sendable`.
final class Listener: @unchecked Sendable {
    let descriptor: Int32
    /// The bound address (with the real port when port 0 was asked for).
    let address: (host: String, port: UInt16)
    private let context: ServerContext
    /// HTTPS listener: connections are TLS with the reloader's current context (nil: plain TCP).
    private let tls: CertificateReloader?
    private let queue = DispatchQueue(label: "dcserve.listener")
    private var source: DispatchSourceRead?

    init(host: String, port: UInt16, context: ServerContext, tls: CertificateReloader? = nil) throws {
        descriptor = try Socket.makeListener(host: host, port: port, backlog: context.configuration.backlog)
        address = Socket.localAddress(descriptor)
        self.context = context
        self.tls = tls
    }

    var isTLS: Bool { tls != nil }

    func start() {
        let s = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        s.setEventHandler { [unowned self] in self.acceptPending() }
        let fd = descriptor
        s.setCancelHandler { _ = close(fd) }
        source = s
        s.resume()
    }

    /// Stops accepting and closes the socket. Pending, unaccepted connections are reset by the kernel.
    func stop() {
        queue.sync {
            source?.cancel()
            source = nil
        }
    }

    private static let overloadResponse: [UInt8] = Array(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 20\r\nConnection: close\r\nRetry-After: 1\r\n\r\ntoo many connections".utf8)

    private func acceptPending() {
        // Bounded batch per event so one busy listener cannot starve its queue; the level-triggered
        // source fires again while connections are pending.
        for _ in 0..<64 {
            let accepted: (fd: Int32, address: String)?
            do {
                accepted = try Socket.accept(descriptor)
            } catch {
                // EMFILE/ENFILE and the like: leave connections pending and pause accepting briefly,
                // or the level-triggered source would spin.
                if let source {
                    source.suspend()
                    queue.asyncAfter(deadline: .now() + .milliseconds(100)) { [self] in self.source?.resume() }
                }
                return
            }
            guard let (fd, remote) = accepted else { return }
            // TLS: the context is taken per accept, so a certificate reload applies to new connections only.
            let transport: ByteTransport
            if let tls {
                guard let t = TLSServerTransport(descriptor: fd, context: tls.current, counters: tls.counters) else { close(fd); continue }
                transport = t
            } else {
                transport = PlainTCPTransport(descriptor: fd)
            }
            let connection = Connection(id: context.makeConnectionID(), transport: transport, remoteAddress: remote, context: context)
            if context.registry.add(connection) {
                connection.start()
            } else if tls != nil {
                transport.close()  // a plain-text 503 would be garbage to a TLS client
            } else {
                // Over the limit: a short 503 (best effort, the socket buffer is empty so it fits) and close.
                Listener.overloadResponse.withUnsafeBytes { _ = send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                shutdown(fd, Int32(SHUT_WR))
                close(fd)
            }
        }
    }
}
