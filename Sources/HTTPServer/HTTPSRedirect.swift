import HTTPTypes
import Synchronization

/// Redirects requests whose scheme is http to the same host and target over https: `301 Moved
/// Permanently` for GET/HEAD, `308 Permanent Redirect` (method and body preserved) otherwise.
/// Requests already https (a TLS listener, or a trusted proxy saying so) go to `next` untouched.
///
/// The https port is set once the TLS listener is bound (it may have been port 0); 443 is left out
/// of `Location`. Thread-safety: the port is an atomic; everything else immutable.
struct HTTPSRedirectHandler: HTTPHandler {
    let next: any HTTPHandler
    let port: PortCell

    final class PortCell: Sendable {
        private let value = Atomic<Int>(443)
        init(_ port: Int) { value.store(port, ordering: .relaxed) }
        var port: Int { value.load(ordering: .relaxed) }
        func set(_ port: Int) { value.store(port, ordering: .relaxed) }
    }

    func handle(_ request: HTTPServerRequest, respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        guard request.head.scheme != "https" else { return next.handle(request, respond: respond) }
        guard let host = Self.hostWithoutPort(request.head.authority) else {
            return respond(.text(.badRequest, "a Host field naming this server is required"))
        }
        let p = port.port
        let location = "https://\(host)\(p == 443 ? "" : ":\(p)")\(request.head.path ?? "/")"
        let method = request.method
        let status: HTTPResponse.Status = (method == .get || method == .head) ? .movedPermanently : .permanentRedirect
        var fields = HTTPFields()
        fields[.location] = location
        respond(.text(status, "moved to \(location)", headerFields: fields))
    }

    /// The host part of an authority ("example.com:80" → "example.com", "[::1]:80" → "[::1]"); nil
    /// when empty or containing characters a host cannot have (no header injection through Location).
    static func hostWithoutPort(_ authority: String?) -> String? {
        guard var a = authority, !a.isEmpty else { return nil }
        if a.hasPrefix("[") {
            guard let close = a.firstIndex(of: "]") else { return nil }
            a = String(a[...close])
        } else if let colon = a.firstIndex(of: ":") {
            a = String(a[..<colon])
        }
        let allowed = a.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
                || c == UInt8(ascii: ".") || c == UInt8(ascii: "-") || c == UInt8(ascii: ":") || c == UInt8(ascii: "[") || c == UInt8(ascii: "]")
        }
        return allowed && !a.isEmpty ? a : nil
    }
}
