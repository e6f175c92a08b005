#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import Synchronization
import TestSupport
import Locking

/// A real upstream for the client tests: a blocking TCP listener on 127.0.0.1 (ephemeral port) with
/// one thread per accepted connection running `handler`. Counts accepted connections. `stop()` closes
/// the listener and every connection it accepted (the tests stop what they start).
final class TestUpstream: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let handler: @Sendable (TestUpstreamConnection, Int) -> Void
    private final class AcceptState: Sendable {
        let lock = Locked<(accepted: Int, connections: [TestUpstreamConnection], stopped: Bool)>((0, [], false))
        func withLock<R>(_ body: (inout (accepted: Int, connections: [TestUpstreamConnection], stopped: Bool)) -> R) -> R {
            lock.withLock { body(&$0) }
        }
    }
    private let state = AcceptState()
    private let acceptThread: Thread?

    /// `backlog`: listen backlog; `accept: false` never accepts (a blackhole once the backlog is full).
    init(backlog: Int32 = 64, accept: Bool = true,
         handler: @escaping @Sendable (TestUpstreamConnection, _ index: Int) -> Void = { _, _ in }) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        precondition(fd >= 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        precondition(bound == 0 && listen(fd, backlog) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        listener = fd
        self.handler = handler
        if accept {
            let thread = Thread { [state, handler] in
                while true {
                    let c = Glibc.accept(fd, nil, nil)
                    if c < 0 { if errno == EINTR { continue }; return }
                    let connection = TestUpstreamConnection(descriptor: c)
                    let index: Int? = state.withLock { s in
                        if s.stopped { return nil }
                        s.accepted += 1
                        s.connections.append(connection)
                        return s.accepted - 1
                    }
                    guard let index else { connection.close(); return }
                    let worker = Thread { handler(connection, index); connection.close() }
                    worker.start()
                }
            }
            acceptThread = thread
            thread.start()
        } else {
            acceptThread = nil
        }
    }

    var acceptedConnections: Int { state.withLock { $0.accepted } }

    func stop() {
        let connections = state.withLock { s in
            s.stopped = true
            return s.connections
        }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for c in connections { c.close() }
    }

    /// `stop()`, then keeps the port refusing connects for the rest of the run (no other test's
    /// listener can take it). False when another socket took the port in between.
    func stopRefusingConnects() -> Bool {
        stop()
        return RefusingPort.hold(port: port) != nil
    }
}

/// One accepted connection of `TestUpstream` (blocking socket, used by its handler thread).
final class TestUpstreamConnection: @unchecked Sendable {
    private let descriptor: Int32
    private var buffer: [UInt8] = []
    private let closed = Atomic<Bool>(false)
    /// Body bytes `write` got into the kernel so far (for the back-pressure test).
    let bytesWritten = Atomic<Int>(0)

    init(descriptor: Int32) { self.descriptor = descriptor }

    /// Reads one request: the head (as text) and a body framed by Content-Length or chunked. Nil at
    /// EOF or error.
    func readRequest() -> (head: String, body: [UInt8])? {
        guard let headEnd = readUntil(Array("\r\n\r\n".utf8)) else { return nil }
        let head = String(decoding: buffer[..<headEnd], as: UTF8.self)
        buffer.removeFirst(headEnd + 4)
        let lower = head.lowercased()
        var body: [UInt8] = []
        if let range = lower.range(of: "\r\ncontent-length: ") {
            let digits = lower[range.upperBound...].prefix { $0.isNumber }
            let n = Int(digits) ?? 0
            guard fill(n) else { return nil }
            body = Array(buffer[..<n])
            buffer.removeFirst(n)
        } else if lower.contains("\r\ntransfer-encoding: chunked") {
            while true {
                guard let lineEnd = readUntil(Array("\r\n".utf8)) else { return nil }
                let size = Int(String(decoding: buffer[..<lineEnd], as: UTF8.self), radix: 16) ?? 0
                buffer.removeFirst(lineEnd + 2)
                if size == 0 {
                    guard readUntil(Array("\r\n".utf8)) != nil else { return nil }
                    buffer.removeFirst(2)
                    break
                }
                guard fill(size + 2) else { return nil }
                body += buffer[..<size]
                buffer.removeFirst(size + 2)
            }
        }
        return (head, body)
    }

    /// Reads just a head (for 100-continue tests: the body comes later).
    func readHead() -> String? {
        guard let headEnd = readUntil(Array("\r\n\r\n".utf8)) else { return nil }
        let head = String(decoding: buffer[..<headEnd], as: UTF8.self)
        buffer.removeFirst(headEnd + 4)
        return head
    }

    /// Reads exactly `n` more bytes.
    func readBytes(_ n: Int) -> [UInt8]? {
        guard fill(n) else { return nil }
        let bytes = Array(buffer[..<n])
        buffer.removeFirst(n)
        return bytes
    }

    /// True when the peer closed (EOF or error) — waits up to `timeout` seconds.
    func waitForPeerClose(timeout: Double) -> Bool {
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1_000_000))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var scratch = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(descriptor, &scratch, scratch.count, 0)
            if n == 0 { return true }
            if n < 0 { return errno == ECONNRESET }
        }
    }

    @discardableResult
    func write(_ text: String) -> Bool { write(Array(text.utf8)) }

    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { if n < 0 && errno == EINTR { continue }; return false }
            offset += n
            bytesWritten.add(n, ordering: .relaxed)
        }
        return true
    }

    /// Writes `text` and closes, the last bytes and the FIN in one TCP segment (corked until the
    /// close), so the client sees both in one readiness edge.
    func writeAndClose(_ text: String) {
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_CORK, &one, socklen_t(MemoryLayout<Int32>.size))
        write(text)
        close()
    }

    func close() {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        shutdown(descriptor, Int32(SHUT_RDWR))
        Glibc.close(descriptor)
    }

    private func readUntil(_ marker: [UInt8]) -> Int? {
        var searchFrom = 0
        while true {
            if buffer.count >= marker.count {
                var i = searchFrom
                while i + marker.count <= buffer.count {
                    if buffer[i] == marker[0] && Array(buffer[i..<i + marker.count]) == marker { return i }
                    i += 1
                }
                searchFrom = max(0, buffer.count - marker.count + 1)
            }
            guard readMore() else { return nil }
        }
    }

    private func fill(_ n: Int) -> Bool {
        while buffer.count < n { guard readMore() else { return false } }
        return true
    }

    private func readMore() -> Bool {
        var scratch = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(descriptor, &scratch, scratch.count, 0)
            if n > 0 { buffer += scratch[..<n]; return true }
            if n < 0 && errno == EINTR { continue }
            return false
        }
    }
}

/// A port on 127.0.0.1 where connects are refused for the rest of the run (see `RefusingPort`).
func refusedPort() -> Int { RefusingPort.make() }
