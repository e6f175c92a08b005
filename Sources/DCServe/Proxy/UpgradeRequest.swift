import HTTPCore
import HTTPServer
import HTTPTypes

/// Which client requests are forwarded as protocol upgrades (RFC 9110 §7.8): an HTTP/1.1 `GET`
/// without a body whose `Connection` lists `upgrade` and whose `Upgrade` names a protocol other
/// than `h2c` (HTTP/2 over cleartext is a hop's own business: dcserve speaks HTTP/1.1 upstream, so
/// it is dropped, as `Upgrade` is for every other request). Pure; thread-safe.
enum UpgradeRequest {
    /// The `Upgrade` value to send upstream (the client's protocols, `h2c` removed, in order), or
    /// nil when the request is not forwarded as an upgrade.
    static func protocols(_ request: HTTPServerRequest) -> String? {
        guard request.method == .get, request.version == .http1_1, request.bodyStream == nil, request.body.isEmpty else {
            return nil
        }
        let fields = request.head.headerFields
        guard fields[values: .connection].contains(where: { value in
            value.fieldMembers(separatedBy: ",").contains { $0.lowercased() == "upgrade" }
        }) else { return nil }
        var kept: [Substring] = []
        for value in fields[values: .upgrade] {
            for token in value.fieldMembers(separatedBy: ",") where !token.isEmpty {
                let name = token.split(separator: "/", maxSplits: 1).first ?? token
                if name.lowercased() != "h2c" { kept.append(token) }
            }
        }
        return kept.isEmpty ? nil : kept.joined(separator: ", ")
    }
}
