import HTTPTypes

/// Serializes an `HTTPClientRequest`'s head as HTTP/1.1 bytes (into the caller's buffer). Pure function.
///
/// Framing fields are the client's: `Content-Length`/`Transfer-Encoding`/`Connection`/`Keep-Alive`
/// from the caller are dropped and replaced by what the body needs (and `Connection: upgrade` for a
/// request that asks to switch protocols). Bytes that would break the
/// message (CR, LF, NUL in values; space or controls in the path) are neutralised: values get a space,
/// the path gets percent-encoding — so no caller input can split the request.
enum RequestHeadEncoder {
    enum Framing: Equatable {
        case none
        case contentLength(Int)
        case chunked
    }

    static func framing(for request: HTTPClientRequest) -> Framing {
        switch request.body {
        case .none:
            switch request.method {
            case .post, .put, .patch: return .contentLength(0)
            default: return .none
            }
        case .bytes(let bytes): return .contentLength(bytes.count)
        case .stream(_, let length): return length.map { .contentLength($0) } ?? .chunked
        }
    }

    /// Appends the head's bytes to `out` (a connection's output buffer, kept from request to request:
    /// no array made per request).
    static func append(_ request: HTTPClientRequest, server: UpstreamServer, framing: Framing, to out: inout [UInt8]) {
        out.append(contentsOf: request.method.rawValue.utf8)
        out.append(0x20)
        let path = request.head.path ?? "/"
        let target = path.isEmpty ? "/" : path
        if target.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) {
            for b in target.utf8 {
                if b <= 0x20 || b == 0x7F {
                    out.append(0x25)
                    out.append(hexDigit(b >> 4))
                    out.append(hexDigit(b & 0xF))
                } else {
                    out.append(b)
                }
            }
        } else {
            out.append(contentsOf: target.utf8)  // the usual clean target: one copy
        }
        out.append(contentsOf: " HTTP/1.1\r\n".utf8)
        var hasHost = false
        if let lines = request.fieldLines {
            out.append(contentsOf: lines)
            hasHost = true
        }
        for field in request.head.headerFields {
            // By length first: most names match none of these, and a failed String == is a call.
            switch field.name.canonicalName.utf8.count {
            case 4: if field.name == hostName { hasHost = true }
            case 10: if field.name == .connection || field.name == keepAliveName { continue }
            case 14: if field.name == .contentLength { continue }
            case 17: if field.name == .transferEncoding { continue }
            default: break
            }
            // The value's bytes as received (obs-text stays byte for byte; `.value` is lossy UTF-8).
            field.withUnsafeBytesOfValue { appendField(field.name.rawName, $0, to: &out) }
        }
        if !hasHost {
            appendField("Host", request.head.authority ?? server.authority, to: &out)
        }
        if request.upgrade { appendField("Connection", "upgrade", to: &out) }
        switch framing {
        case .none: break
        case .contentLength(let n): appendField("Content-Length", String(n), to: &out)
        case .chunked: appendField("Transfer-Encoding", "chunked", to: &out)
        }
        out.append(0x0D)
        out.append(0x0A)
    }

    private static func appendField(_ name: String, _ value: String, to out: inout [UInt8]) {
        var value = value
        value.withUTF8 { appendField(name, $0, to: &out) }
    }

    private static func appendField(_ name: String, _ value: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        out.append(contentsOf: name.utf8)
        out.append(0x3A)
        out.append(0x20)
        if value.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }) {
            for b in value { out.append(b == 0x0D || b == 0x0A || b == 0x00 ? 0x20 : b) }
        } else {
            out.append(contentsOf: value)  // the usual clean value: one copy
        }
        out.append(0x0D)
        out.append(0x0A)
    }

    private static let hostName = HTTPField.Name("Host")!
    private static let keepAliveName = HTTPField.Name("Keep-Alive")!

    private static func hexDigit(_ v: UInt8) -> UInt8 { v < 10 ? 0x30 + v : 0x41 + v - 10 }
}
