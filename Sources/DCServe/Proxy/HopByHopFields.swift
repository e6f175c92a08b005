import HTTPCore
import HTTPServer
import HTTPTypes

/// Hop-by-hop fields (RFC 9110 §7.6.1): meaningful for one connection only, so a proxy removes them,
/// together with every field the message's `Connection` field names, before forwarding a message in
/// either direction. Pure functions; thread-safe.
public enum HopByHopFields {
    /// Always removed, whether or not `Connection` lists them. `Transfer-Encoding` and
    /// `Content-Length` are framing: the next hop's framing is set by whoever writes that hop.
    /// (``isHopByHop(_:)`` answers the same question without hashing; a test keeps them equal.)
    public static let names: Set<HTTPField.Name> = [
        .connection, keepAlive, proxyConnection, .te, .trailer, .transferEncoding, .upgrade,
        .proxyAuthorization, .proxyAuthenticate, .contentLength,
    ]

    static let keepAlive = HTTPField.Name("Keep-Alive")!
    static let proxyConnection = HTTPField.Name("Proxy-Connection")!

    /// Whether `name` is one of ``names``, without hashing the name (most of the cost of a `Set`
    /// lookup; the proxy asks for every field of every request and response).
    @inline(__always)
    public static func isHopByHop(_ name: HTTPField.Name) -> Bool {
        var canonical = name.canonicalName
        return canonical.withUTF8 { isHopByHop(nameBytes: $0) }
    }

    /// The one table of ``names``, on name bytes as received (any case): by length first, so the usual
    /// end-to-end field costs one switch.
    @inline(__always)
    static func isHopByHop(nameBytes bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        @inline(__always) func equals(_ literal: StaticString) -> Bool {
            let l = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
            for i in 0..<bytes.count {
                let b = bytes[i]
                if (b >= 0x41 && b <= 0x5A ? b | 0x20 : b) != l[i] { return false }
            }
            return true
        }
        switch bytes.count {
        case 2: return equals("te")
        case 7: return equals("trailer") || equals("upgrade")
        case 10: return equals("connection") || equals("keep-alive")
        case 14: return equals("content-length")
        case 16: return equals("proxy-connection")
        case 17: return equals("transfer-encoding")
        case 18: return equals("proxy-authenticate")
        case 19: return equals("proxy-authorization")
        default: return false
        }
    }

    /// The field names listed in every `Connection` line of `fields` (lower-cased tokens; members that
    /// are not valid field names are ignored).
    public static func connectionListed(in fields: HTTPFields) -> Set<HTTPField.Name> {
        var listed = Set<HTTPField.Name>()
        for value in fields[values: .connection] {
            for token in value.fieldMembers(separatedBy: ",") {
                if !token.isEmpty, let name = HTTPField.Name(String(token)) { listed.insert(name) }
            }
        }
        return listed
    }

    /// The names `Connection` lists that are not removed anyway: ``connectionListed(in:)`` without
    /// ``names``. Empty, without allocating, for the usual `Connection: keep-alive` or none. (The
    /// members are read by ``extraConnectionListed(_:)``, the one scan of them on bytes.)
    static func extraConnectionListed(in fields: HTTPFields) -> Set<HTTPField.Name> {
        var listed = Set<HTTPField.Name>()
        let tokens = extraConnectionListed { body in
            for field in fields where field.name == .connection {
                var name = field.name.canonicalName
                name.withUTF8 { name in field.withUnsafeBytesOfValue { body(name, $0) } }
            }
        }
        for token in tokens {
            if let name = HTTPField.Name(String(decoding: token, as: UTF8.self)) { listed.insert(name) }
        }
        return listed
    }

    /// ``extraConnectionListed(in:)`` for fields given as received bytes (`forEachField` calls its
    /// argument with each field's name and value bytes): the names lower-cased, as bytes. Members are
    /// scanned in place, so the usual `Connection: keep-alive` allocates nothing.
    static func extraConnectionListed(
        _ forEachField: ((_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>) -> Void) -> Void
    ) -> [[UInt8]] {
        var listed: [[UInt8]] = []
        forEachField { name, v in
            guard asciiCaseInsensitiveEquals(name, "connection") else { return }
            // Comma-separated members, OWS trimmed, empty ones skipped.
            var start = 0
            while start < v.count {
                var end = start
                while end < v.count && v[end] != UInt8(ascii: ",") { end += 1 }
                var a = start, b = end
                while a < b && (v[a] == 0x20 || v[a] == 0x09) { a += 1 }
                while b > a && (v[b - 1] == 0x20 || v[b - 1] == 0x09) { b -= 1 }
                start = end + 1
                let token = UnsafeBufferPointer(rebasing: v[a..<b])
                guard !token.isEmpty, !isHopByHop(nameBytes: token),
                      HTTPField.Name(String(decoding: token, as: UTF8.self)) != nil else { continue }
                listed.append(token.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 })
            }
        }
        return listed
    }

    /// ``extraConnectionListed(_:)`` of a received request head.
    static func extraConnectionListed(in received: ReceivedRequestHead) -> [[UInt8]] {
        extraConnectionListed(received.forEachField)
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
