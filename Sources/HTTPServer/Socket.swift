#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed socket system call, with the call's name and errno.
public struct SocketError: Error, CustomStringConvertible, Equatable {
    public let call: String
    public let errno: Int32
    public var description: String { "\(call): \(String(cString: strerror(errno)))" }
    public var isAddressInUse: Bool { errno == EADDRINUSE }
}

/// Thin wrappers over BSD socket calls on a raw descriptor. No ownership: callers close.
enum Socket {
    /// Creates a non-blocking listening TCP socket bound to `host:port` (IPv4 or IPv6 literal).
    static func makeListener(host: String, port: UInt16, backlog: Int32) throws -> Int32 {
        var storage = sockaddr_storage()
        let length: socklen_t
        let family: Int32
        if host.contains(":") {
            var a = sockaddr_in6()
            a.sin6_family = sa_family_t(AF_INET6)
            a.sin6_port = port.bigEndian
            guard inet_pton(AF_INET6, host, &a.sin6_addr) == 1 else { throw SocketError(call: "inet_pton(\(host))", errno: EINVAL) }
            withUnsafeBytes(of: a) { src in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: src) } }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            family = AF_INET6
        } else {
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_port = port.bigEndian
            guard inet_pton(AF_INET, host, &a.sin_addr) == 1 else { throw SocketError(call: "inet_pton(\(host))", errno: EINVAL) }
            withUnsafeBytes(of: a) { src in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: src) } }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            family = AF_INET
        }
        #if canImport(Glibc)
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let fd = socket(family, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw SocketError(call: "socket", errno: errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if family == AF_INET6 {
            setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        let rc = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard rc == 0 else { let e = errno; close(fd); throw SocketError(call: "bind(\(host):\(port))", errno: e) }
        guard listen(fd, backlog) == 0 else { let e = errno; close(fd); throw SocketError(call: "listen", errno: e) }
        return fd
    }

    /// Accepts one connection as a non-blocking descriptor; nil when none is pending (EAGAIN).
    static func accept(_ listener: Int32) throws -> (fd: Int32, address: String)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        while true {
            let fd = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    // accept4 is not visible from Swift's Glibc module; two fcntl calls instead.
                    Glibc.accept(listener, $0, &length)
                }
            }
            if fd >= 0 {
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                var one: Int32 = 1
                setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                return (fd, describe(&storage))
            }
            switch errno {
            case EINTR, ECONNABORTED: continue
            case EAGAIN, EWOULDBLOCK: return nil
            default: throw SocketError(call: "accept", errno: errno)
            }
        }
    }

    /// The address a socket is bound to, as (host, port).
    static func localAddress(_ fd: Int32) -> (host: String, port: UInt16) {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return hostAndPort(&storage)
    }

    static func describe(_ storage: inout sockaddr_storage) -> String {
        let (host, port) = hostAndPort(&storage)
        return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    static func hostAndPort(_ storage: inout sockaddr_storage) -> (host: String, port: UInt16) {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        if Int32(storage.ss_family) == AF_INET6 {
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { a in
                    var addr = a.pointee.sin6_addr
                    inet_ntop(AF_INET6, &addr, &text, socklen_t(text.count))
                    return (String(cString: text), UInt16(bigEndian: a.pointee.sin6_port))
                }
            }
        }
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { a in
                var addr = a.pointee.sin_addr
                inet_ntop(AF_INET, &addr, &text, socklen_t(text.count))
                return (String(cString: text), UInt16(bigEndian: a.pointee.sin_port))
            }
        }
    }

    /// Raises the soft RLIMIT_NOFILE to the hard limit; returns the new soft limit.
    @discardableResult
    static func raiseFileDescriptorLimit() -> UInt64 {
        var limit = rlimit()
        #if canImport(Glibc)
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        #else
        let resource = RLIMIT_NOFILE
        #endif
        guard getrlimit(resource, &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(resource, &limit)
            _ = getrlimit(resource, &limit)
        }
        return UInt64(limit.rlim_cur)
    }
}
