#if canImport(Glibc)
import Glibc
#endif
import Locking

/// Loopback ports where connects are refused for the rest of the test process: each is held by a
/// socket that is bound and never listens (the kernel answers a SYN with a reset). Holding the port
/// matters because tests run in parallel: a port merely closed can be taken by another test's
/// listener before the connect, which then succeeds. The sockets are never closed (a handful per run).
public enum RefusingPort {
    private static let held = Locked<[Int32]>([])

    /// A fresh ephemeral port on 127.0.0.1, refused from now on.
    public static func make() -> Int {
        guard let port = hold(port: 0) else { fatalError("cannot bind an ephemeral loopback port: errno \(errno)") }
        return port
    }

    /// Holds `port` (a listener that was just closed) so that connects to it are refused; nil when
    /// another socket took it meanwhile (`errno` says why).
    public static func hold(port: Int) -> Int? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { let code = errno; close(fd); errno = code; return nil }
        held.withLock { $0.append(fd) }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
