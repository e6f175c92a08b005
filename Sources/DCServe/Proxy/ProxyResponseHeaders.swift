import HTTPTypes

/// The response head dcserve sends to its client for an upstream's response (RFC 9110 §7.6):
/// hop-by-hop fields and the fields the upstream's `Connection` names removed (the server writes its
/// own framing and `Connection`), `Via` appended per the policy. The upstream's `Date`, `Server`,
/// validators and caching fields are end-to-end and pass unchanged. Pure; thread-safe.
public enum ProxyResponseHeaders {
    public static func make(_ response: HTTPResponse, protocolVersion: String = "1.1", policy: ProxyHeaderPolicy) -> HTTPResponse {
        var out = response
        out.headerFields = HopByHopFields.removing(from: response.headerFields)
        if policy.via {
            let previous = response.headerFields[values: ProxyRequestHeaders.via]
            out.headerFields[ProxyRequestHeaders.via] = (previous + ["\(protocolVersion) \(policy.pseudonym)"]).joined(separator: ", ")
        }
        return out
    }

    /// Whether `Cache-Control` carries `no-transform` (RFC 9110 §7.7, RFC 9111 §5.2.2.6): then no
    /// intermediary may change the content coding or the body.
    public static func forbidsTransform(_ fields: HTTPFields) -> Bool {
        for value in fields[values: .cacheControl] {
            for member in value.split(separator: ",") {
                let directive = member.split(separator: "=", maxSplits: 1).first.map { $0.trimmingOWS() } ?? ""
                if directive.lowercased() == "no-transform" { return true }
            }
        }
        return false
    }
}
