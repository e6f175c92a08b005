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

    /// Whether `Cache-Control` carries `no-transform` (RFC 9110 §7.7, RFC 9111 §5.2.2.6): then no
    /// intermediary may change the content coding or the body.
    public static func forbidsTransform(_ fields: HTTPFields) -> Bool {
        for field in fields where field.name == .cacheControl {
            if forbidsTransform(cacheControl: field.value) { return true }
        }
        return false
    }

    /// Whether one `Cache-Control` line carries `no-transform`.
    static func forbidsTransform(cacheControl value: String) -> Bool {
        for member in value.split(separator: ",") {
            let directive = member.split(separator: "=", maxSplits: 1).first.map { $0.trimmingOWS() } ?? ""
            if directive.lowercased() == "no-transform" { return true }
        }
        return false
    }
}
