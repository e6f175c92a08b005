import DCServe
import DictionaryCodec
import Foundation

/// `dcserve estimate`'s engine: replays a recorded session through dcserve itself, twice (with a
/// simulated dictionary client, and as a client without dictionary transport would be served), and
/// compares the bytes. See ``ReplayPass`` for how a pass runs and ``EstimateReport`` for the result.
///
/// Only the exchanges of one origin are replayed (by default the origin with the most entries);
/// exchanges whose body is not in the file are not replayed and are named in the report.
/// Not thread-safe; `estimate` blocks for two replays.
public struct Estimator {
    public var configuration: DCServeConfiguration
    /// `Accept-Encoding` of the simulated client without dcb/dcz (a current browser's by default).
    public var acceptEncoding = "gzip, deflate, br, zstd"
    /// The origin to replay (`https://host[:port]`); nil: the most frequent one in the file.
    public var origin: String?

    public init(configuration: DCServeConfiguration) {
        self.configuration = configuration
    }

    public func estimate(_ archive: HTTPArchive, file: String) async throws -> EstimateReport {
        let origin = self.origin?.lowercased() ?? Self.mostFrequentOrigin(archive.exchanges) ?? "-"
        var report = EstimateReport(file: file, creator: archive.creator, origin: origin, entries: archive.exchanges.count, replayed: 0)
        var replayable: [RecordedExchange] = []
        for exchange in archive.exchanges {
            let named = { (reason: String) in
                EstimateReport.NamedEntry(entry: exchange.index, method: exchange.method, url: exchange.url, reason: reason)
            }
            if exchange.origin != origin {
                report.skipped.append(named("another origin (\(exchange.origin)); replayed: \(origin)"))
            } else if case .missing(let why) = exchange.body {
                report.skipped.append(named(why))
            } else {
                if case .base64 = exchange.body { report.base64Bodies.append(named("body recorded in base64, decoded")) }
                replayable.append(exchange)
            }
        }
        report.replayed = replayable.count
        let counts = configuration.server.decisionHeader
        let withDictionaries = try await ReplayPass(configuration: configuration, mode: .dictionary, acceptEncoding: acceptEncoding,
                                                    countsDecisionField: counts).run(replayable)
        let plain = try await ReplayPass(configuration: configuration, mode: .plain, acceptEncoding: acceptEncoding,
                                         countsDecisionField: counts).run(replayable)
        let start = replayable.first?.started ?? Date()
        for (i, exchange) in replayable.enumerated() {
            let body = exchange.body.bytes ?? []
            let d = withDictionaries[i], p = plain[i]
            report.requests.append(EstimateReport.RequestRow(
                entry: exchange.index, time: exchange.started.timeIntervalSince(start), method: exchange.method,
                path: exchange.path, group: EndpointGroup.of(path: exchange.path), rule: d.decision?.rule,
                status: d.status, identityBytes: body.count, plainCoding: p.coding, plainBodyBytes: p.bodyBytes,
                plainBytes: p.headBytes + p.bodyBytes, br11Bytes: Self.brotli11Size(body), dictionaryCoding: d.coding,
                dictionaryBodyBytes: d.bodyBytes, dictionaryBytes: d.totalBytes, linkFetches: d.linkFetches,
                linkBytes: d.linkBytes, missReason: d.missReason, error: d.error ?? p.error))
        }
        report.summarise()
        report.notes = Self.notes
        return report
    }

    static let notes = [
        "Replayed through dcserve's own proxy, rules, negotiation and codecs; the client's dictionary lifetimes follow the recorded times, "
            + "while server-side clocks (history dictionaries' rebuildSeconds and lifetimeSeconds) run at replay speed.",
        "Bytes are response heads and bodies as received over HTTP/1.1 (chunked framing not counted); request bytes are not counted.",
        "Conditional request fields are not replayed: every response carries its body.",
    ]

    /// The origin with the most exchanges (the first seen on a tie).
    static func mostFrequentOrigin(_ exchanges: [RecordedExchange]) -> String? {
        var counts: [String: Int] = [:], order: [String] = []
        for e in exchanges {
            if counts[e.origin] == nil { order.append(e.origin) }
            counts[e.origin, default: 0] += 1
        }
        return order.max { counts[$0]! < counts[$1]! || (counts[$0]! == counts[$1]! && order.firstIndex(of: $0)! > order.firstIndex(of: $1)!) }
    }

    /// Size of `body` as brotli quality 11 (0 for an empty body).
    static func brotli11Size(_ body: [UInt8]) -> Int {
        guard !body.isEmpty else { return 0 }
        return (try? Brotli.encode(body, level: 11).count) ?? body.count
    }
}
