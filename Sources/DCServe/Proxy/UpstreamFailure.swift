import HTTPClient
import HTTPServer
import HTTPTypes

/// What the client gets when the upstream exchange failed before a response head (RFC 9110
/// §15.6.3, §15.6.5): 504 for a timeout, 502 for everything else (refused, reset, invalid or
/// truncated response, no server available), with a one-line body naming the upstream and the reason
/// (the details of the upstream's address stay in the log). A value; `Sendable`.
struct UpstreamFailure: Sendable {
    let status: HTTPResponse.Status
    let reason: String
    let upstream: String

    init(_ error: HTTPClientError, upstream: String) {
        self.upstream = upstream
        switch error {
        case .connectFailed(let server, let code):
            status = .badGateway
            reason = "cannot connect to \(server) (errno \(code))"
        case .timedOut(let server, let phase):
            status = .gatewayTimeout
            reason = "\(server.host):\(server.port) timed out (\(phase))"
        case .invalidResponse(let server, let why):
            status = .badGateway
            reason = "invalid response from \(server.host):\(server.port): \(why)"
        case .closedEarly(let server):
            status = .badGateway
            reason = "\(server.host):\(server.port) closed the connection before the response was complete"
        case .cancelled:
            status = .badGateway
            reason = "cancelled"
        case .noServerAvailable:
            status = .badGateway
            reason = "no server available"
        }
    }

    var response: HTTPServerResponse {
        let summary = status == .gatewayTimeout ? "504 Gateway Timeout: upstream \(upstream) did not answer in time"
                                                : "502 Bad Gateway: upstream \(upstream) failed"
        return .text(status, summary, headerFields: [.cacheControl: "no-store"])
    }
}
