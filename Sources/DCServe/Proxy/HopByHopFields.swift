import HTTPTypes

/// Hop-by-hop fields (RFC 9110 §7.6.1): meaningful for one connection only, so a proxy removes them,
/// together with every field the message's `Connection` field names, before forwarding a message in
/// either direction. Pure functions; thread-safe.
public enum HopByHopFields {
    /// Always removed, whether or not `Connection` lists them. `Transfer-Encoding` and
    /// `Content-Length` are framing: the next hop's framing is set by whoever writes that hop.
    public static let names: Set<HTTPField.Name> = [
        .connection, keepAlive, proxyConnection, .te, .trailer, .transferEncoding, .upgrade,
        .proxyAuthorization, .proxyAuthenticate, .contentLength,
    ]

    static let keepAlive = HTTPField.Name("Keep-Alive")!
    static let proxyConnection = HTTPField.Name("Proxy-Connection")!

    /// The field names listed in every `Connection` line of `fields` (lower-cased tokens; members that
    /// are not valid field names are ignored).
    public static func connectionListed(in fields: HTTPFields) -> Set<HTTPField.Name> {
        var listed = Set<HTTPField.Name>()
        for value in fields[values: .connection] {
            for member in value.split(separator: ",") {
                let token = member.trimmingOWS()
                if !token.isEmpty, let name = HTTPField.Name(String(token)) { listed.insert(name) }
            }
        }
        return listed
    }

    /// `fields` without the hop-by-hop fields, the fields `Connection` names, and `extra`.
    public static func removing(from fields: HTTPFields, extra: Set<HTTPField.Name> = []) -> HTTPFields {
        let listed = connectionListed(in: fields)
        var out = HTTPFields()
        out.reserveCapacity(fields.count)
        for field in fields where !names.contains(field.name) && !listed.contains(field.name) && !extra.contains(field.name) {
            out.append(field)
        }
        return out
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    func trimmingOWS() -> Substring {
        var s = self
        while let c = s.first, c == " " || c == "\t" { s.removeFirst() }
        while let c = s.last, c == " " || c == "\t" { s.removeLast() }
        return s
    }
}
