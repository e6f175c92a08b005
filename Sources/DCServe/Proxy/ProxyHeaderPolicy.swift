import HTTPTypes

/// How the reverse proxy rewrites request heads on their way to an upstream (RFC 9110 §7.6).
/// Built from an upstream's configuration; a plain value, `Sendable`.
public struct ProxyHeaderPolicy: Sendable, Equatable {
    /// What the upstream sees in `Host`.
    public enum HostField: Sendable, Equatable {
        /// The client's `Host` (the request's authority), unchanged.
        case keep
        /// The upstream server's own `host:port`.
        case upstream
        /// This exact value.
        case fixed(String)
    }

    public var host: HostField = .keep
    /// Append the client's address to `X-Forwarded-For`, and set `X-Real-IP` to it (unless a trusted
    /// proxy sent one). Off: neither, and a client's `X-Real-IP` is still removed.
    public var forwardedFor = true
    /// Set `X-Forwarded-Proto` to the scheme the client used.
    public var forwardedProto = true
    /// Send an RFC 7239 `Forwarded` element (`for`, `proto`, `host`): appended to a trusted proxy's
    /// elements, replacing anyone else's.
    public var forwarded = false
    /// Append `Via` (request and response).
    public var via = true
    /// Forward `Available-Dictionary` / `Dictionary-ID` and the client's dictionary codings (the
    /// upstream negotiates dictionaries itself). Off: dcserve answers them and the upstream never sees them.
    public var upstreamHandlesDictionaries = false
    /// The `received-by` pseudonym in `Via`.
    public var pseudonym = "dcserve" {
        didSet {
            via11 = "1.1 " + pseudonym
            via11Field = [ProxyRequestHeaders.via: via11]
        }
    }
    /// This hop's `Via` element for HTTP/1.1 (`1.1 <pseudonym>`), made once instead of per message.
    private(set) var via11 = "1.1 dcserve"
    /// `Via: <via11>` as fields, for a response whose upstream sent no `Via`: appended without a field
    /// built or a list allocated per response.
    private(set) var via11Field: HTTPFields = [ProxyRequestHeaders.via: "1.1 dcserve"]

    public init() {}
}
