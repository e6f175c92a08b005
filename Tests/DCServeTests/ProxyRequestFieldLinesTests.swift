@testable import DCServe
@testable import HTTPClient
import HTTPCore
@testable import HTTPServer
import HTTPTypes
import Testing

/// The upstream request head written from the received bytes (`ProxyRequestHeaders.fieldLines`) is
/// byte for byte the one written from `ProxyRequestHeaders.make`'s `HTTPRequest`, for every header
/// policy, trusted and untrusted peers.
@Suite struct ProxyRequestFieldLinesTests {
    static let requests = [
        "GET /a?b=1 HTTP/1.1\r\nHost: site.example\r\nUser-Agent: t\r\nAccept-Encoding: gzip, br, zstd, dcb, dcz\r\n\r\n",
        "GET / HTTP/1.1\r\nhost: Site.Example:8080\r\nconnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nx-keep: 2\r\nTE: trailers\r\nUpgrade: h2c\r\n\r\n",
        "GET /p HTTP/1.1\r\nHost: h\r\nVia: 1.0 a\r\nvia: 1.1 b\r\nX-Forwarded-For: 1.1.1.1\r\nX-Forwarded-For: 2.2.2.2\r\nForwarded: for=9.9.9.9\r\nX-Real-IP: 8.8.8.8\r\nX-Forwarded-Proto: https\r\n\r\n",
        "GET /d HTTP/1.1\r\nHost: h\r\nAvailable-Dictionary: :AAAA:\r\nDictionary-ID: \"x\"\r\nAccept-Encoding: dcz\r\naccept-encoding: gzip;q=0\r\nExpect: 100-continue\r\nCookie: a=1\r\nCookie: b=2\r\n\r\n",
        "GET /o HTTP/1.1\r\nHost: h\r\nX-Obs: caf\u{E9}\r\nAuthorization: Bearer t\r\nProxy-Authorization: Basic x\r\nKeep-Alive: 5\r\n\r\n",
        "GET /n HTTP/1.0\r\nX-None: host missing\r\n\r\n",
    ]

    static func policies() -> [ProxyHeaderPolicy] {
        var out = [ProxyHeaderPolicy()]
        var p = ProxyHeaderPolicy(); p.via = false; out.append(p)
        p = ProxyHeaderPolicy(); p.forwarded = true; out.append(p)
        p = ProxyHeaderPolicy(); p.forwardedFor = false; p.forwardedProto = false; out.append(p)
        p = ProxyHeaderPolicy(); p.host = .upstream; p.upstreamHandlesDictionaries = true; out.append(p)
        p = ProxyHeaderPolicy(); p.host = .fixed("api.internal"); out.append(p)
        return out
    }

    @Test(arguments: requests)
    func sameHeadAsFromTheBuiltRequest(raw: String) throws {
        var bytes = Array(raw.utf8)
        if let i = bytes.firstIndex(of: 0xC3) { bytes.replaceSubrange(i..<i + 2, with: [0xE9]) }  // obs-text
        var parser = RequestParser()
        let (_, output) = try bytes.withUnsafeBytes { try parser.parse($0) }
        guard case .request(let parsed) = output else { Issue.record("no request"); return }
        let head = parsed.makeHTTPRequest { _ in "http" }
        let received = ReceivedRequestHead(parsed)
        let server = UpstreamServer(host: "127.0.0.1", port: 8000, tls: false)
        for policy in Self.policies() {
            for trusted in [false, true] {
                for address in ["10.1.2.3:5555", "[::1]:4000"] {
                    let context = ProxyRequestHeaders.Context(clientAddress: address, scheme: "https", protocolVersion: "1.1",
                                                              upstreamAuthority: "127.0.0.1:8000", fromTrustedProxy: trusted)
                    let built = HTTPClientRequest(head: ProxyRequestHeaders.make(head, context: context, policy: policy))
                    var bare = head
                    bare.headerFields = [:]
                    var copied = HTTPClientRequest(head: bare)
                    copied.fieldLines = ProxyRequestHeaders.fieldLines(received, authority: head.authority, context: context, policy: policy)
                    var a: [UInt8] = [], b: [UInt8] = []
                    RequestHeadEncoder.append(built, server: server, framing: .none, to: &a)
                    RequestHeadEncoder.append(copied, server: server, framing: .none, to: &b)
                    #expect(a == b, "\(policy) trusted=\(trusted)\n\(String(decoding: a, as: UTF8.self))\n\(String(decoding: b, as: UTF8.self))")
                }
            }
        }
    }
}
