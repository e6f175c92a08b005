#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why an exchange failed. The proxy maps these to 502 (`connectFailed`, `invalidResponse`,
/// `closedEarly`, `noServerAvailable`) or 504 (`timedOut`).
public enum HTTPClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The TCP connection (or the TLS handshake: errno EPROTO) could not be established.
    case connectFailed(server: UpstreamServer, errno: Int32)
    /// No progress for the configured time; `phase` is "connect", "send" or "read".
    case timedOut(server: UpstreamServer, phase: String)
    /// The upstream sent something that is not a valid HTTP/1.1 response (parse error, a transfer
    /// coding other than chunked, ...).
    case invalidResponse(server: UpstreamServer, reason: String)
    /// The connection was reset or closed before the response was complete.
    case closedEarly(server: UpstreamServer)
    /// `HTTPClientExchange.cancel()` was called, or the request body source failed.
    case cancelled
    /// The configuration lists no server.
    case noServerAvailable

    public var description: String {
        switch self {
        case .connectFailed(let server, let code):
            let reason = code == EPROTO ? "TLS handshake failed" : String(cString: strerror(code))
            return "cannot connect to \(server): \(reason) (errno \(code))"
        case .timedOut(let server, let phase): return "\(server) timed out (\(phase))"
        case .invalidResponse(let server, let reason): return "invalid response from \(server): \(reason)"
        case .closedEarly(let server): return "\(server) closed the connection before the response was complete"
        case .cancelled: return "cancelled"
        case .noServerAvailable: return "no upstream server configured"
        }
    }
}
