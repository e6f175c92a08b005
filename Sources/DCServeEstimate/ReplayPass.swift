import DCServe
import DictionaryClient
import DictionaryClientSystemCodecs
import DictionaryTransport
import Foundation
import HTTPTypes
import Logging
import Prometheus
import Locking

/// One replay of recorded exchanges through a real dcserve server started in this process on a
/// loopback port, proxying to a ``ReplayUpstream`` that serves the recorded responses.
///
/// `.dictionary` replays with a simulated RFC 9842 client (a ``DictionaryClient`` per run, one store
/// partition per client identity, its clock at each entry's recorded start time, honouring
/// `Link: rel="compression-dictionary"`); `.plain` replays the same requests against the same
/// configuration without dictionary rules, so each response is what dcserve sends a client without
/// dictionary transport. Each pass has its own temporary dictionary store, removed at the end.
///
/// Not thread-safe; `run` blocks for the length of the replay.
struct ReplayPass {
    enum Mode { case dictionary, plain }

    var configuration: DCServeConfiguration
    var mode: Mode
    /// `Accept-Encoding` the simulated client sends (without dcb/dcz; those are added when it names a dictionary).
    var acceptEncoding: String
    /// Whether the user's configuration asked for `DCServe-Decision`; when not, its bytes are not counted.
    var countsDecisionField: Bool

    /// Request fields not replayed: framing, the recording's own content negotiation and dictionary
    /// fields (the simulated client sets its own), conditionals (the replay always serves the body).
    static let droppedRequestFields: Set<String> = [
        "host", "content-length", "transfer-encoding", "connection", "keep-alive", "proxy-connection", "te", "upgrade",
        "accept-encoding", "available-dictionary", "dictionary-id", "if-none-match", "if-modified-since", "if-match",
        "if-unmodified-since", "if-range",
    ]

    /// Most `Link` dictionary fetches followed per response.
    static let maxLinkFetches = 4

    /// Replays `exchanges` in order; the result has one observation per exchange.
    func run(_ exchanges: [RecordedExchange]) async throws -> [ReplayObservation] {
        let storeDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("dcserve-estimate-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: storeDirectory) }
        let upstream = ReplayUpstream(exchanges: exchanges)
        try upstream.start()
        defer { upstream.stop() }

        var c = configuration
        c.server.host = "127.0.0.1"
        c.server.port = 0
        c.server.decisionHeader = true
        c.server.accessLog = false
        c.server.redirectToHTTPS = false
        c.server.eventLoops = 2
        c.admin.enabled = false
        c.tls.certificate = nil
        c.tls.key = nil
        c.tls.sni = []
        c.store.kind = .directory
        c.store.path = storeDirectory
        c.compression.precompress = false
        c.upstreams = [Upstream(name: "replay", servers: [upstream.baseURL])]
        c.routes = [Route(name: "replay", prefix: "/", upstream: "replay")]
        if mode == .plain {
            c.rules = []
            c.outOfBand = []
        }
        try c.validate()

        var logger = Logger(label: "dcserve.estimate")
        logger.logLevel = .error
        var accessLogger = Logger(label: "dcserve.access")
        accessLogger.logLevel = .critical
        let server = try DCServeServer(configuration: c, registry: PrometheusCollectorRegistry(), logger: logger,
                                       accessLogger: accessLogger, upstreamHandler: ReverseProxyHandler.factory(logger: logger))
        try server.start()
        guard let port = server.main.boundEndpoints.first?.port else {
            _ = await server.shutdown()
            throw ReplayPassError(description: "the replay server did not report its port")
        }
        let transport = ReplayTransport(port: Int(port))
        /// The recording's clock, read by the client (its closure keeps the reference).
        final class Clock: Sendable { let now = Locked(Date()) }
        let clock = Clock()
        // The system libraries' decoders (dcb, br, gzip, zstd, dcz): each request names its Accept-Encoding.
        let client = DictionaryClient(store: try ClientDictionaryStore(location: .memory),
                                      decoders: .systemLibraries, now: { clock.now.withLock { $0 } })
        let identity = ClientIdentity(configuration: configuration)
        var observations: [ReplayObservation] = []
        observations.reserveCapacity(exchanges.count)
        for exchange in exchanges {
            clock.now.withLock { $0 = exchange.started }
            observations.append(replay(exchange, port: Int(port), transport: transport, client: client, identity: identity,
                                       partition: identity.partition(of: exchange), now: exchange.started))
        }
        transport.close()
        _ = await server.shutdown()
        return observations
    }

    private func replay(_ exchange: RecordedExchange, port: Int, transport: ReplayTransport, client: DictionaryClient,
                        identity: ClientIdentity, partition: String, now: Date) -> ReplayObservation {
        var fields = HTTPFields()
        for (name, value) in exchange.requestFields where !name.hasPrefix(":") && !Self.droppedRequestFields.contains(name.lowercased()) {
            guard let fieldName = HTTPField.Name(name) else { continue }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        fields[.acceptEncoding] = acceptEncoding
        var observation = ReplayObservation()
        let url = "http://127.0.0.1:\(port)\(exchange.pathAndQuery)"
        let destination = exchange.requestField("Sec-Fetch-Dest") ?? ""
        var prepared: PreparedDictionaryRequest?
        if mode == .dictionary, ["GET", "HEAD"].contains(exchange.method) {
            let entries = client.store.entries(partition: partition)
            if let target = ClientRequestTarget(url: url),
               DictionarySelector.select(from: entries, target: target, destination: destination, now: now) == nil,
               DictionarySelector.select(from: entries, target: target, destination: destination, now: .distantPast) != nil {
                observation.heldExpired = true
            }
            prepared = try? client.prepare(url: url, destination: destination, partition: partition, fields: fields)
            if let prepared {
                fields = prepared.fields
                observation.offeredDictionary = prepared.dictionary != nil
            }
        }
        let response: ReplayTransport.Response
        do {
            response = try transport.send(method: exchange.method, pathAndQuery: exchange.pathAndQuery, fields: fields,
                                          body: exchange.requestBody)
        } catch {
            observation.error = error.description
            return observation
        }
        record(response, into: &observation)
        guard let prepared else { return observation }
        do {
            let processed = try client.process(Self.withoutDate(response), for: prepared)
            for link in processed.dictionaryLinks.prefix(Self.maxLinkFetches) where !holds(client, link, partition: partition, now: now) {
                guard let linkRequest = try? client.prepare(url: link.description, destination: "", partition: partition,
                                                            fields: Self.credentials(of: fields, identity: identity, acceptEncoding: acceptEncoding))
                else { continue }
                do {
                    let linked = try transport.send(method: "GET", pathAndQuery: link.pathAndQuery, fields: linkRequest.fields, body: [])
                    observation.linkFetches += 1
                    observation.linkBytes += countedHeadBytes(linked) + linked.body.count
                    _ = try client.process(Self.withoutDate(linked), for: linkRequest)
                } catch {
                    observation.error = "Link \(link.pathAndQuery): \(error)"
                }
            }
        } catch {
            observation.error = "response dropped by the client: \(error)"
        }
        return observation
    }

    private func record(_ response: ReplayTransport.Response, into observation: inout ReplayObservation) {
        observation.status = response.status
        observation.coding = response.fields[.contentEncoding] ?? "identity"
        observation.headBytes = countedHeadBytes(response)
        observation.bodyBytes = response.body.count
        observation.decision = response.fields[Self.decisionField].flatMap(ReplayObservation.Decision.init(fieldValue:))
    }

    static let decisionField = HTTPField.Name(ResponseDecision.fieldName)!

    /// Head bytes as received, less the `DCServe-Decision` line when the configuration did not ask for it.
    private func countedHeadBytes(_ response: ReplayTransport.Response) -> Int {
        guard !countsDecisionField else { return response.headByteCount }
        let decisionBytes = response.fields[values: Self.decisionField].reduce(0) {
            $0 + ResponseDecision.fieldName.utf8.count + 2 + $1.utf8.count + 2
        }
        return response.headByteCount - decisionBytes
    }

    /// Whether the client already holds an unexpired dictionary fetched from `link` (a browser's HTTP
    /// cache would answer that fetch without the network).
    private func holds(_ client: DictionaryClient, _ link: ClientRequestTarget, partition: String, now: Date) -> Bool {
        client.store.entries(partition: partition).contains { $0.sourceURL == link.description && !$0.isExpired(at: now) }
    }

    /// The fields of a `Link` dictionary fetch: `Accept-Encoding` and the request's credentials
    /// (`Authorization`, `Cookie`, the partition headers), as the app's own client would send them: a
    /// per-user dictionary is only served to its user.
    static func credentials(of fields: HTTPFields, identity: ClientIdentity, acceptEncoding: String) -> HTTPFields {
        var out: HTTPFields = [.acceptEncoding: acceptEncoding]
        for name in ["Authorization", "Cookie"] + identity.headers {
            guard let field = HTTPField.Name(name), out[field] == nil else { continue }
            for value in fields[values: field] { out.append(HTTPField(name: field, value: value)) }
        }
        return out
    }

    /// The response for the client, without `Date`: the client's clock is the recording's, the
    /// server's is today's, so freshness is computed from `Cache-Control` and `Age` alone.
    static func withoutDate(_ response: ReplayTransport.Response) -> ClientResponse {
        var fields = response.fields
        fields[.date] = nil
        return ClientResponse(status: response.status, fields: fields, body: response.body)
    }
}

struct ReplayPassError: Error, CustomStringConvertible {
    let description: String
}

/// Which simulated client (dictionary store partition) a recorded request belongs to: the values of
/// the request headers and cookies the configuration's partitioned rules key on (a user's own device
/// holds only that user's dictionaries); one anonymous client when no rule is partitioned. A rule
/// partitioned by an upstream header keys the client by `Authorization` and `Cookie`. Pure.
struct ClientIdentity {
    var headers: [String] = []
    var cookies: [String] = []

    init(configuration: DCServeConfiguration) {
        for rule in configuration.rules {
            switch rule.partition {
            case .header(let name)?: headers.append(name)
            case .cookie(let name)?: cookies.append(name)
            case .upstreamHeader?: headers += ["Authorization", "Cookie"]
            case nil: break
            }
        }
    }

    func partition(of exchange: RecordedExchange) -> String {
        var parts: [String] = []
        for name in headers { if let value = exchange.requestField(name) { parts.append("\(name.lowercased())=\(value)") } }
        if !cookies.isEmpty, let cookie = exchange.requestField("Cookie") {
            for pair in cookie.split(separator: ";") {
                let kv = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                if kv.count == 2, cookies.contains(kv[0]) { parts.append("cookie:\(kv[0])=\(kv[1])") }
            }
        }
        return parts.joined(separator: "\n")
    }
}
