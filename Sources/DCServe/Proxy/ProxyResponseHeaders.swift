import HTTPClient
import HTTPCore
import HTTPServer
import HTTPTypes

/// The response head dcserve sends to its client for an upstream's response (RFC 9110 §7.6):
/// hop-by-hop fields and the fields the upstream's `Connection` names removed (the server writes its
/// own framing and `Connection`), `Via` appended per the policy. The upstream's `Date`, `Server`,
/// validators and caching fields are end-to-end and pass unchanged. Pure; thread-safe.
public enum ProxyResponseHeaders {
    public static func make(_ response: HTTPResponse, protocolVersion: String = "1.1", policy: ProxyHeaderPolicy) -> HTTPResponse {
        let listed = HopByHopFields.extraConnectionListed(in: response.headerFields)
        var fields = HTTPFields()
        fields.reserveCapacity(response.headerFields.count + 1)
        var via = ""  // the upstream's Via lines, joined
        for field in response.headerFields {
            let name = field.name
            if HopByHopFields.isHopByHop(name) || (!listed.isEmpty && listed.contains(name)) { continue }
            if policy.via && name == ProxyRequestHeaders.via {
                via += via.isEmpty ? field.value : ", " + field.value
                continue
            }
            fields.append(field)
        }
        if policy.via {
            let own = protocolVersion == "1.1" ? policy.via11 : "\(protocolVersion) \(policy.pseudonym)"
            fields.append(HTTPField(name: ProxyRequestHeaders.via, value: via.isEmpty ? own : via + ", " + own))
        }
        var out = response
        out.headerFields = fields
        return out
    }

    /// ``make(_:protocolVersion:policy:)`` for a head as the client parsed it, as a forwarded head:
    /// the dropped fields (framing, `Connection` and what it lists, the upstream's `Via` lines when
    /// `Via` is rewritten) are marked removed and `Via` appended; the rest is sent as received, no
    /// `HTTPField` built. `.response` is the same `HTTPResponse` `make` gives (a test compares them).
    public static func forwarded(_ head: ParsedResponseHead, protocolVersion: String = "1.1", policy: ProxyHeaderPolicy) -> ForwardedResponseHead {
        var out = ForwardedResponseHead(head)
        head.headBytes.withUnsafeBufferPointer { bytes in
            let ranges = head.fieldRanges
            @inline(__always) func name(_ i: Int) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: bytes[ranges[i].name]) }
            @inline(__always) func value(_ i: Int) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: bytes[ranges[i].value]) }
            // Names `Connection` lists beyond the always-removed ones, lower-case (rare: usually none).
            let listed = HopByHopFields.extraConnectionListed(out.forEachKeptField)
            var via = ""  // the upstream's Via lines, joined
            for i in 0..<ranges.count {
                let nameBytes = name(i)
                if HopByHopFields.isHopByHop(nameBytes: nameBytes)
                    || (!listed.isEmpty && listed.contains { asciiCaseInsensitiveEquals(nameBytes, $0) }) {
                    out.removeField(at: i)
                } else if policy.via && asciiCaseInsensitiveEquals(nameBytes, "via") {
                    let fieldValue = String(decoding: value(i), as: UTF8.self)
                    via += via.isEmpty ? fieldValue : ", " + fieldValue
                    out.removeField(at: i)
                }
            }
            if policy.via {
                if via.isEmpty && protocolVersion == "1.1" {
                    out.append(contentsOf: policy.via11Field)
                } else {
                    let own = protocolVersion == "1.1" ? policy.via11 : "\(protocolVersion) \(policy.pseudonym)"
                    out.append(HTTPField(name: ProxyRequestHeaders.via, value: via.isEmpty ? own : via + ", " + own))
                }
            }
        }
        return out
    }

    /// ``make(_:protocolVersion:policy:)`` for a head as the client parsed it (as an `HTTPResponse`).
    public static func make(_ head: ParsedResponseHead, protocolVersion: String = "1.1", policy: ProxyHeaderPolicy) -> HTTPResponse {
        forwarded(head, protocolVersion: protocolVersion, policy: policy).response
    }

    /// Whether `Cache-Control` carries `no-transform` (RFC 9110 §7.7, RFC 9111 §5.2.2.6): then no
    /// intermediary may change the content coding or the body.
    public static func forbidsTransform(_ fields: HTTPFields) -> Bool {
        for field in fields where field.name == .cacheControl {
            if forbidsTransform(cacheControl: field.value) { return true }
        }
        return false
    }

    /// ``forbidsTransform(_:)`` for a response of either form (no head built for a forwarded one).
    public static func forbidsTransform(_ response: HTTPServerResponse) -> Bool {
        guard let forwarded = response.forwarded else { return forbidsTransform(response.head.headerFields) }
        return forwarded.values(.cacheControl).contains { forbidsTransform(cacheControl: $0) }
    }

    /// Whether one `Cache-Control` line carries `no-transform`.
    static func forbidsTransform(cacheControl value: String) -> Bool {
        value.cacheControlDirectives.contains { $0.isNamed("no-transform") }
    }
}
