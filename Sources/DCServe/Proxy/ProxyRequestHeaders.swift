import DictionaryCodec
import DictionaryTransport
import HTTPCore
import HTTPServer
import HTTPTypes

/// The request head dcserve sends to an upstream for a client's request (RFC 9110 §7.6): hop-by-hop
/// fields and the fields `Connection` names removed, `Expect` removed (dcserve answers
/// `100-continue` itself and forwards complete bodies), `Via`, `X-Forwarded-For`,
/// `X-Forwarded-Proto` and `Forwarded` per the policy, `Host` kept or rewritten, the dictionary
/// fields withheld unless the upstream handles dictionaries, and `Accept-Encoding` narrowed to the
/// codings dcserve can decode (gzip, br, zstd; identity always). Pure; thread-safe.
///
/// Who the client is, as the upstream hears it: `Forwarded` (policy `forwarded`) gets dcserve's
/// element appended to the elements a trusted proxy sent (RFC 7239 §4), and replaces whatever anyone
/// else sent (a client's own `Forwarded: for=` is a claim, not a hop). `X-Real-IP` names one address,
/// the client's: a trusted proxy's value passes; from anyone else it is replaced by the peer's address
/// when `forwardedFor` is on (the address `X-Forwarded-For` gets, under the name nginx set-ups
/// read), and removed when it is off, so an upstream never takes a client's word for its address.
/// `X-Forwarded-For` keeps its de facto rule: the peer's address appended to what came.
public enum ProxyRequestHeaders {
    /// Where the client's request came from and where it goes.
    public struct Context: Sendable, Equatable {
        /// Peer address as the server reports it: `127.0.0.1:53122` or `[::1]:53122`.
        public var clientAddress: String {
            didSet { clientHost = ProxyRequestHeaders.clientHost(clientAddress) }
        }
        /// `clientAddress`'s host part: the address `X-Forwarded-For`, `X-Real-IP` and `Forwarded` name
        /// (kept with `clientAddress`).
        public private(set) var clientHost: String
        /// `http` or `https`: the scheme the client used to reach dcserve.
        public var scheme: String
        /// The request line's version, `1.0` or `1.1` (Via's received-protocol).
        public var protocolVersion: String
        /// The upstream server's `host:port` (Host when the policy says `.upstream`).
        public var upstreamAuthority: String
        /// The peer is a trusted proxy (`server.trustedProxies`): its `Forwarded` elements and
        /// `X-Real-IP` describe the real client and are kept; from anyone else they are replaced.
        public var fromTrustedProxy: Bool

        /// `clientHost`: `clientAddress`'s host part when the caller has it (a request's `remoteHost`).
        public init(clientAddress: String, clientHost: String? = nil, scheme: String, protocolVersion: String,
                    upstreamAuthority: String, fromTrustedProxy: Bool = false) {
            self.clientAddress = clientAddress
            self.clientHost = clientHost ?? ProxyRequestHeaders.clientHost(clientAddress)
            self.scheme = scheme
            self.protocolVersion = protocolVersion
            self.upstreamAuthority = upstreamAuthority
            self.fromTrustedProxy = fromTrustedProxy
        }
    }

    /// Codings dcserve decodes when it needs a body as identity.
    public static let decodableCodings: [ContentCoding] = [.gzip, .br, .zstd]

    static let expect = HTTPField.Name("Expect")!
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
    static let xForwardedProto = HTTPField.Name("X-Forwarded-Proto")!
    static let forwarded = HTTPField.Name("Forwarded")!
    static let xRealIP = HTTPField.Name("X-Real-IP")!
    static let via = HTTPField.Name("Via")!
    static let host = HTTPField.Name("Host")!

    /// The upstream request head for `request`. The authority carries the `Host` to send; no `Host`
    /// line stays in the fields (the client writes it from the authority).
    public static func make(_ request: HTTPRequest, context: Context, policy: ProxyHeaderPolicy) -> HTTPRequest {
        let listed = HopByHopFields.extraConnectionListed(in: request.headerFields)
        var fields = HTTPFields()
        fields.reserveCapacity(request.headerFields.count + 4)
        var collected = Collected()
        // One pass: drop what must not be forwarded, collect what is rewritten, keep the rest in order.
        for field in request.headerFields {
            let name = field.name
            if HopByHopFields.isHopByHop(name) || (!listed.isEmpty && listed.contains(name)) { continue }
            var canonical = name.canonicalName
            let disposition = canonical.withUTF8 { Disposition($0, context: context, policy: policy) }
            if disposition == .keep {
                fields.append(field)
            } else {
                collected.add(field.value, as: disposition)
            }
        }
        collected.addedFields(authority: request.authority, context: context, policy: policy) { name, existing, value in
            fields.append(HTTPField(name: name, value: existing.map { $0 + ", " + value } ?? value))
        }
        var out = request
        let authority = upstreamAuthority(request.authority, context: context, policy: policy)
        // Set only when it changes: the setter copies the request's shared pseudo-field storage.
        if authority != request.authority { out.authority = authority }
        out.headerFields = fields
        return out
    }

    /// The `Host` the upstream gets.
    static func upstreamAuthority(_ requested: String?, context: Context, policy: ProxyHeaderPolicy) -> String {
        switch policy.host {
        case .keep: requested ?? context.upstreamAuthority
        case .upstream: context.upstreamAuthority
        case .fixed(let value): value
        }
    }

    /// What happens to a client field on its way upstream (hop-by-hop fields aside), by name.
    enum Disposition: Equatable {
        case keep, drop, via, forwarded, realIP, acceptEncoding, forwardedFor

        /// `name`: the field name's bytes, any case.
        init(_ name: UnsafeBufferPointer<UInt8>, context: Context, policy: ProxyHeaderPolicy) {
            let dictionariesHere = !policy.upstreamHandlesDictionaries
            // By length first: most names match none of these.
            switch name.count {
            case 3 where policy.via && asciiCaseInsensitiveEquals(name, "via"): self = .via
            case 4 where asciiCaseInsensitiveEquals(name, "host"): self = .drop
            case 6 where asciiCaseInsensitiveEquals(name, "expect"): self = .drop
            case 9 where policy.forwarded && asciiCaseInsensitiveEquals(name, "forwarded"): self = context.fromTrustedProxy ? .forwarded : .drop
            case 9 where asciiCaseInsensitiveEquals(name, "x-real-ip"): self = context.fromTrustedProxy ? .realIP : .drop
            case 13 where dictionariesHere && asciiCaseInsensitiveEquals(name, "dictionary-id"): self = .drop
            case 15 where dictionariesHere && asciiCaseInsensitiveEquals(name, "accept-encoding"): self = .acceptEncoding
            case 15 where policy.forwardedFor && asciiCaseInsensitiveEquals(name, "x-forwarded-for"): self = .forwardedFor
            case 17 where policy.forwardedProto && asciiCaseInsensitiveEquals(name, "x-forwarded-proto"): self = .drop
            case 20 where dictionariesHere && asciiCaseInsensitiveEquals(name, "available-dictionary"): self = .drop
            default: self = .keep
            }
        }
    }

    /// The client's values of the rewritten fields, several lines joined with ", " as they come (no
    /// list per field: usually one line or none).
    struct Collected {
        var acceptEncoding: String?, forwardedFor: String?, forwardedElements: String?, vias: String?, realIP: String?

        mutating func add(_ value: String, as disposition: Disposition) {
            func add(_ value: String, to joined: inout String?) { joined = joined.map { $0 + ", " + value } ?? value }
            switch disposition {
            case .via: add(value, to: &vias)
            case .forwarded: add(value, to: &forwardedElements)
            case .realIP: realIP = value  // the last line: the nearest proxy's
            case .acceptEncoding: add(value, to: &acceptEncoding)
            case .forwardedFor: add(value, to: &forwardedFor)
            case .keep, .drop: break
            }
        }

        /// Calls `emit` with each field dcserve adds after the client's, in order: its name, the client's
        /// value it extends (nil when none) and dcserve's value; the line's value is `existing, value`.
        /// Nothing is joined here: the caller writes the parts (bytes) or joins them (a field).
        func addedFields(authority: String?, context: Context, policy: ProxyHeaderPolicy,
                         _ emit: (HTTPField.Name, _ existing: String?, _ value: String) -> Void) {
            if !policy.upstreamHandlesDictionaries {
                // Several lines mean the same as one comma-joined line (RFC 9110 §5.3).
                let codings = acceptEncoding.map { decodableCodings.filter(AcceptEncoding(fieldValue: $0).accepts) } ?? []
                emit(.acceptEncoding, nil, codings.isEmpty ? "identity" : codings.map(\.rawValue).joined(separator: ", "))
            }
            let clientIP = context.clientHost
            if policy.forwardedFor { emit(xForwardedFor, forwardedFor, clientIP) }
            if let realIP {
                emit(xRealIP, nil, realIP)
            } else if policy.forwardedFor {
                emit(xRealIP, nil, clientIP)
            }
            if policy.forwardedProto { emit(xForwardedProto, nil, context.scheme) }
            if policy.forwarded {
                var element = "for=\(forwardedNode(clientIP));proto=\(context.scheme)"
                if let authority { element += ";host=\(forwardedValue(authority))" }
                emit(forwarded, forwardedElements, element)
            }
            if policy.via {
                emit(via, vias, context.protocolVersion == "1.1" ? policy.via11 : "\(context.protocolVersion) \(policy.pseudonym)")
            }
        }
    }

    /// The host part of a peer address: `1.2.3.4:5` → `1.2.3.4`, `[::1]:5` → `::1`.
    static func clientHost(_ address: String) -> String { HTTPServerRequest.host(ofPeerAddress: address) }

    /// An RFC 7239 node: IPv6 addresses bracketed and quoted.
    static func forwardedNode(_ ip: String) -> String { ip.contains(":") ? "\"[\(ip)]\"" : ip }

    /// An RFC 7239 value: a token as it is, anything else quoted (with `"` and `\` escaped).
    static func forwardedValue(_ value: String) -> String {
        let isToken = !value.isEmpty && value.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || "!#$%&'*+-.^_`|~".utf8.contains(b)
        }
        if isToken { return value }
        var quoted = "\""
        for c in value { if c == "\"" || c == "\\" { quoted.append("\\") }; quoted.append(c) }
        return quoted + "\""
    }
}
