import DictionaryCodec
import DictionaryTransport
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
        public var clientAddress: String
        /// `http` or `https`: the scheme the client used to reach dcserve.
        public var scheme: String
        /// The request line's version, `1.0` or `1.1` (Via's received-protocol).
        public var protocolVersion: String
        /// The upstream server's `host:port` (Host when the policy says `.upstream`).
        public var upstreamAuthority: String
        /// The peer is a trusted proxy (`server.trustedProxies`): its `Forwarded` elements and
        /// `X-Real-IP` describe the real client and are kept; from anyone else they are replaced.
        public var fromTrustedProxy: Bool

        public init(clientAddress: String, scheme: String, protocolVersion: String, upstreamAuthority: String,
                    fromTrustedProxy: Bool = false) {
            self.clientAddress = clientAddress
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
        let dictionariesHere = !policy.upstreamHandlesDictionaries
        let listed = HopByHopFields.extraConnectionListed(in: request.headerFields)
        var fields = HTTPFields()
        fields.reserveCapacity(request.headerFields.count + 4)
        // Several lines of one field, joined with ", " as they come (no list per field: usually one line or none).
        var acceptEncoding: String?, forwardedFor: String?, forwardedElements: String?, vias: String?, realIP: String?
        func add(_ value: String, to joined: inout String?) { joined = joined.map { $0 + ", " + value } ?? value }
        // One pass: drop what must not be forwarded, collect what is rewritten, keep the rest in order.
        for field in request.headerFields {
            let name = field.name
            if HopByHopFields.isHopByHop(name) || (!listed.isEmpty && listed.contains(name)) { continue }
            // By length first: most names match none of these, and a failed String == is a call.
            switch name.canonicalName.utf8.count {
            case 3 where policy.via && name == via: add(field.value, to: &vias); continue
            case 4 where name == host: continue
            case 6 where name == expect: continue
            case 9 where policy.forwarded && name == forwarded:
                if context.fromTrustedProxy { add(field.value, to: &forwardedElements) }
                continue
            case 9 where name == xRealIP:
                if context.fromTrustedProxy { realIP = field.value }  // the last line: the nearest proxy's
                continue
            case 13 where dictionariesHere && name == .dictionaryID: continue
            case 15 where dictionariesHere && name == .acceptEncoding: add(field.value, to: &acceptEncoding); continue
            case 15 where policy.forwardedFor && name == xForwardedFor: add(field.value, to: &forwardedFor); continue
            case 17 where policy.forwardedProto && name == xForwardedProto: continue
            case 20 where dictionariesHere && name == .availableDictionary: continue
            default: break
            }
            fields.append(field)
        }
        if dictionariesHere {
            // Several lines mean the same as one comma-joined line (RFC 9110 §5.3).
            let codings = acceptEncoding.map { decodableCodings.filter(AcceptEncoding(fieldValue: $0).accepts) } ?? []
            fields.append(HTTPField(name: .acceptEncoding,
                                    value: codings.isEmpty ? "identity" : codings.map(\.rawValue).joined(separator: ", ")))
        }
        let clientIP = clientHost(context.clientAddress)
        if policy.forwardedFor {
            add(clientIP, to: &forwardedFor)
            fields.append(HTTPField(name: xForwardedFor, value: forwardedFor!))
        }
        if let realIP {
            fields.append(HTTPField(name: xRealIP, value: realIP))
        } else if policy.forwardedFor {
            fields.append(HTTPField(name: xRealIP, value: clientIP))
        }
        if policy.forwardedProto {
            fields.append(HTTPField(name: xForwardedProto, value: context.scheme))
        }
        if policy.forwarded {
            var element = "for=\(forwardedNode(clientIP));proto=\(context.scheme)"
            if let authority = request.authority { element += ";host=\(forwardedValue(authority))" }
            add(element, to: &forwardedElements)
            fields.append(HTTPField(name: forwarded, value: forwardedElements!))
        }
        if policy.via {
            add(context.protocolVersion == "1.1" ? policy.via11 : "\(context.protocolVersion) \(policy.pseudonym)", to: &vias)
            fields.append(HTTPField(name: via, value: vias!))
        }
        var out = request
        let authority: String = switch policy.host {
        case .keep: request.authority ?? context.upstreamAuthority
        case .upstream: context.upstreamAuthority
        case .fixed(let value): value
        }
        // Set only when it changes: the setter copies the request's shared pseudo-field storage.
        if authority != request.authority { out.authority = authority }
        out.headerFields = fields
        return out
    }

    /// The host part of a peer address: `1.2.3.4:5` → `1.2.3.4`, `[::1]:5` → `::1`.
    static func clientHost(_ address: String) -> String {
        // On the UTF-8 view: a search by Character would segment graphemes on every request.
        let u = address.utf8
        if u.first == UInt8(ascii: "["), let close = u.firstIndex(of: UInt8(ascii: "]")) {
            return String(address[u.index(after: u.startIndex)..<close])
        }
        if let colon = u.lastIndex(of: UInt8(ascii: ":")), u.firstIndex(of: UInt8(ascii: ":")) == colon {
            return String(address[..<colon])
        }
        return address
    }

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
