#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed socket system call, with the call's name and errno.
public struct SocketError: Error, CustomStringConvertible, Equatable, Sendable {
    public let call: String
    public let errno: Int32
    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }
    public var description: String { "\(call): \(String(cString: strerror(errno)))" }
    public var isAddressInUse: Bool { errno == EADDRINUSE }
}

/// Thin wrappers over BSD socket calls on a raw descriptor. No ownership: callers close.
public enum Socket {
    /// Creates a non-blocking listening TCP socket bound to `host:port` (IPv4 or IPv6 literal).
    public static func makeListener(host: String, port: UInt16, backlog: Int32) throws -> Int32 {
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
    public static func accept(_ listener: Int32) throws -> (fd: Int32, address: String)? {
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
    public static func localAddress(_ fd: Int32) -> (host: String, port: UInt16) {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return hostAndPort(&storage)
    }

    public static func describe(_ storage: inout sockaddr_storage) -> String {
        let (host, port) = hostAndPort(&storage)
        return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    public static func hostAndPort(_ storage: inout sockaddr_storage) -> (host: String, port: UInt16) {
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

    /// Starts a non-blocking TCP connection to `host:port`: an IPv4 or IPv6 literal, or a name
    /// resolved with `getaddrinfo` (blocking: resolve names off the event loop, or pass literals).
    /// `resolve` then `connect(to:)`; see there.
    public static func connect(host: String, port: UInt16) throws -> (descriptor: Int32, connected: Bool) {
        try connect(to: resolve(host: host, port: port), host: host, port: port)
    }

    /// The TCP addresses of `host:port` in `getaddrinfo`'s order: an IPv4 or IPv6 literal (IPv6
    /// optionally in brackets; no lookup), or a name looked up with `getaddrinfo` — which blocks for as
    /// long as the resolver takes: never call it for a name on an event loop or on Dispatch's shared pool.
    /// Throws `SocketError` (call "getaddrinfo(host)", errno EHOSTUNREACH) when there is none.
    public static func resolve(host: String, port: UInt16) throws -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV | (isAddressLiteral(host) ? AI_NUMERICHOST : 0)
        var list: UnsafeMutablePointer<addrinfo>?
        let literal = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let rc = getaddrinfo(literal, String(port), &hints, &list)
        guard rc == 0, let first = list else { throw SocketError(call: "getaddrinfo(\(host))", errno: EHOSTUNREACH) }
        defer { freeaddrinfo(first) }
        var addresses: [SocketAddress] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let a = entry {
            entry = a.pointee.ai_next
            if let address = a.pointee.ai_addr { addresses.append(SocketAddress(address, length: a.pointee.ai_addrlen)) }
        }
        guard !addresses.isEmpty else { throw SocketError(call: "getaddrinfo(\(host))", errno: EHOSTUNREACH) }
        return addresses
    }

    /// Starts a non-blocking TCP connection to the first of `addresses` that accepts one (does not
    /// block). Returns the descriptor (non-blocking, close-on-exec, TCP_NODELAY) and whether the
    /// connection is already established; when it is not, wait for writability and call
    /// `connectResult`. Throws `SocketError` (call "connect(host:port)", the last errno; EHOSTUNREACH
    /// for no address) when none could even be tried. `host`/`port`: for the error only.
    public static func connect(to addresses: [SocketAddress], host: String, port: UInt16) throws -> (descriptor: Int32, connected: Bool) {
        var lastError: Int32 = EHOSTUNREACH
        for address in addresses {
            let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { lastError = errno; continue }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let rc: Int32 = address.withSockaddr { pointer, length in
                while true {
                    if Glibc.connect(fd, pointer, length) == 0 { return 0 }
                    if errno == EINTR { continue }
                    return errno
                }
            }
            if rc == 0 { return (fd, true) }
            if rc == EINPROGRESS { return (fd, false) }
            lastError = rc
            Glibc.close(fd)
        }
        throw SocketError(call: "connect(\(host):\(port))", errno: lastError)
    }

    /// The outcome of a non-blocking `connect` once its descriptor became writable: 0 when
    /// connected, else the errno (ECONNREFUSED, ETIMEDOUT, ...). `SO_ERROR`.
    public static func connectResult(_ descriptor: Int32) -> Int32 {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else { return errno }
        return error
    }

    /// True when `host` is an IPv4 or IPv6 address literal (IPv6 optionally in brackets).
    public static func isAddressLiteral(_ host: String) -> Bool {
        let h = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, h, &v4) == 1 || inet_pton(AF_INET6, h, &v6) == 1
    }

    /// Raises the soft RLIMIT_NOFILE to the hard limit; returns the new soft limit.
    @discardableResult
    public static func raiseFileDescriptorLimit() -> UInt64 {
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
