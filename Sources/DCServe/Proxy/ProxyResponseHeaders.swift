import HTTPClient
import HTTPCore
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
    /// ``make(_:protocolVersion:policy:)`` for a head as the client parsed it, in one pass over its
    /// bytes: the fields that are dropped (framing, `Connection` and what it lists) never become
    /// `HTTPField`s, and no intermediate `HTTPResponse` is built. Same result (a test compares them).
    public static func make(_ head: ParsedResponseHead, protocolVersion: String = "1.1", policy: ProxyHeaderPolicy) -> HTTPResponse {
        head.headBytes.withUnsafeBufferPointer { bytes in
            let ranges = head.fieldRanges
            @inline(__always) func name(_ i: Int) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: bytes[ranges[i].name]) }
            @inline(__always) func value(_ i: Int) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: bytes[ranges[i].value]) }
            // Names `Connection` lists beyond the always-removed ones, lower-case (rare: usually none).
            var listed: [[UInt8]] = []
            for i in 0..<ranges.count where asciiCaseInsensitiveEquals(name(i), connectionBytes) {
                // Comma-separated members, OWS trimmed, empty ones skipped; scanned in place (the usual
                // `keep-alive` allocates nothing).
                let v = value(i)
                var start = 0
                while start < v.count {
                    var end = start
                    while end < v.count && v[end] != UInt8(ascii: ",") { end += 1 }
                    var a = start, b = end
                    while a < b && (v[a] == 0x20 || v[a] == 0x09) { a += 1 }
                    while b > a && (v[b - 1] == 0x20 || v[b - 1] == 0x09) { b -= 1 }
                    start = end + 1
                    let token = UnsafeBufferPointer(rebasing: v[a..<b])
                    guard !token.isEmpty, !HopByHopFields.isHopByHop(nameBytes: token),
                          HTTPField.Name(String(decoding: token, as: UTF8.self)) != nil else { continue }
                    listed.append(token.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 })
                }
            }
            var fields = HTTPFields()
            fields.reserveCapacity(ranges.count + 1)
            var via = ""  // the upstream's Via lines, joined
            for i in 0..<ranges.count {
                let nameBytes = name(i)
                if HopByHopFields.isHopByHop(nameBytes: nameBytes)
                    || (!listed.isEmpty && listed.contains { asciiCaseInsensitiveEquals(nameBytes, $0) }) {
                    continue
                }
                let valueBytes = value(i)
                if policy.via && asciiCaseInsensitiveEquals(nameBytes, viaBytes) {
                    let fieldValue = String(decoding: valueBytes, as: UTF8.self)
                    via += via.isEmpty ? fieldValue : ", " + fieldValue
                    continue
                }
                // Names are tokens: never nil.
                guard let fieldName = CommonFieldNames.name(nameBytes) ?? HTTPField.Name(String(decoding: nameBytes, as: UTF8.self)) else { continue }
                fields.append(HTTPField(name: fieldName, receivedValue: valueBytes))
            }
            if policy.via {
                let own = protocolVersion == "1.1" ? policy.via11 : "\(protocolVersion) \(policy.pseudonym)"
                fields.append(HTTPField(name: ProxyRequestHeaders.via, value: via.isEmpty ? own : via + ", " + own))
            }
            return HTTPResponse(status: HTTPResponse.Status(code: head.status, reasonPhrase: head.reason), headerFields: fields)
        }
    }

    private static let connectionBytes = Array("connection".utf8)
    private static let viaBytes = Array("via".utf8)

    public static func forbidsTransform(_ fields: HTTPFields) -> Bool {
        for field in fields where field.name == .cacheControl {
            if forbidsTransform(cacheControl: field.value) { return true }
        }
        return false
    }

    /// Whether one `Cache-Control` line carries `no-transform`.
    static func forbidsTransform(cacheControl value: String) -> Bool {
        value.cacheControlDirectives.contains { $0.isNamed("no-transform") }
    }
}
