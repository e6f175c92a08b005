#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One address a TCP connection can be made to (IPv4 or IPv6, with its port), as `getaddrinfo`
/// returned it (`Socket.resolve`): a plain value that can be kept (e.g. in a resolver's cache) and
/// connected to later with `Socket.connect(to:)`, so only the lookup ever blocks.
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// `AF_INET` or `AF_INET6`.
    public let family: Int32
    /// The `sockaddr_in` / `sockaddr_in6` bytes.
    let bytes: [UInt8]

    init(_ address: UnsafePointer<sockaddr>, length: socklen_t) {
        family = Int32(address.pointee.sa_family)
        bytes = Array(UnsafeRawBufferPointer(start: address, count: Int(length)))
    }

    /// Calls `body` with the address as a `sockaddr` pointer and its length.
    func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        var storage = sockaddr_storage()
        return withUnsafeMutableBytes(of: &storage) { raw in
            raw.copyBytes(from: bytes)
            return body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(bytes.count))
        }
    }

    /// `host:port` (`[v6]:port`).
    public var description: String {
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { $0.copyBytes(from: bytes) }
        let (host, port) = Socket.hostAndPort(&storage)
        return family == AF_INET6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
