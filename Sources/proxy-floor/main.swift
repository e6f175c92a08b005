import Dispatch
import Glibc
import HTTPClient
import HTTPCore
import HTTPServer
import HTTPTypes
import Logging

// proxy-floor PORT UPSTREAM_PORT [EVENT_LOOPS]: the floor under `bench/proxy`. HTTPServer and
// HTTPClient with the least a reverse proxy does per request: the client's field lines forwarded as
// received (Host from the request's authority), the upstream's answer buffered and relayed with its
// received head (framing and Connection fields dropped). No routing, middleware, header policy,
// compression or dictionary: what dcserve costs above this is what its own layers cost.
// Listens on 127.0.0.1 only; bench use, not a product.

/// One exchange's answer: buffers the body and responds when the upstream finishes.
/// Thread-safety: called on the request's event loop only (the client's contract).
final class BufferingRelay: HTTPClientResponseDelegate, @unchecked Sendable {
    private let respond: @Sendable (consuming HTTPServerResponse) -> Void
    private var head: ForwardedResponseHead?
    private var body: [UInt8] = []

    init(respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) { self.respond = respond }

    /// Not called: the client hands this delegate the parsed head (below).
    func didReceiveHead(_ head: HTTPResponse, bodyLength: HTTPBodyLength) {}

    func didReceiveHead(parsed head: ParsedResponseHead) {
        var forwarded = ForwardedResponseHead(head)
        head.headBytes.withUnsafeBufferPointer { bytes in
            for (i, range) in head.fieldRanges.enumerated() {
                let name = UnsafeBufferPointer(rebasing: bytes[range.name])
                if asciiCaseInsensitiveEquals(name, "content-length") || asciiCaseInsensitiveEquals(name, "transfer-encoding")
                    || asciiCaseInsensitiveEquals(name, "connection") || asciiCaseInsensitiveEquals(name, "keep-alive") {
                    forwarded.removeField(at: i)
                }
            }
        }
        self.head = forwarded
    }

    func didReceiveBodyPart(_ bytes: ArraySlice<UInt8>, resume: @escaping @Sendable () -> Void) {
        body.append(contentsOf: bytes)
        resume()
    }

    func didFinish(trailers: HTTPFields?) {
        guard let head else { return respond(HTTPServerResponse(head: HTTPResponse(status: .badGateway))) }
        respond(HTTPServerResponse(forwarded: head, body: .bytes(body)))
    }

    func didFail(_ error: HTTPClientError) {
        respond(HTTPServerResponse(head: HTTPResponse(status: .badGateway)))
    }
}

/// Forwards every request to the one upstream. Thread-safety: immutable.
struct FloorProxyHandler: HTTPHandler {
    let client: HTTPClient

    func handle(_ request: HTTPServerRequest, respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        var head = request.head
        head.headerFields = [:]
        var lines: [UInt8] = []
        request.received?.forEachField { name, value in
            if asciiCaseInsensitiveEquals(name, "host") { return }
            lines.append(contentsOf: name)
            lines.append(0x3A); lines.append(0x20)
            lines.append(contentsOf: value)
            lines.append(0x0D); lines.append(0x0A)
        }
        lines.append(contentsOf: "Host: \(head.authority ?? "")\r\n".utf8)
        var forwarded = HTTPClientRequest(head: head, body: request.body.isEmpty ? .none : .bytes(request.body))
        forwarded.fieldLines = lines
        _ = client.execute(forwarded, on: request.eventLoop, delegate: BufferingRelay(respond: respond))
    }
}

let arguments = CommandLine.arguments
guard arguments.count >= 3, let port = UInt16(arguments[1]), let upstreamPort = Int(arguments[2]),
      arguments.count == 3 || Int(arguments[3]) != nil else {
    print("usage: proxy-floor PORT UPSTREAM_PORT [EVENT_LOOPS]")
    exit(64)
}
var configuration = ServerConfiguration()
configuration.listenAddresses = [("127.0.0.1", port)]
configuration.eventLoopCount = arguments.count > 3 ? max(1, Int(arguments[3])!) : 2
var clientConfiguration = HTTPClientConfiguration(servers: [UpstreamServer(host: "127.0.0.1", port: upstreamPort)])
clientConfiguration.maxIdleConnectionsPerLoop = 64
// Requests run on the loop they arrived on; this group is only the client's fallback.
let client = HTTPClient(configuration: clientConfiguration, loops: EventLoopGroup(count: 1, sweepInterval: .milliseconds(100)))
var accessLogger = Logger(label: "proxy-floor.access")
accessLogger.logLevel = .warning  // no access log, as bench/proxy runs dcserve
let server = HTTPServer(configuration: configuration, handler: FloorProxyHandler(client: client),
                        accessLog: AccessLog(logger: accessLogger))
try server.start()
print("listening on http://127.0.0.1:\(port)")
dispatchMain()
