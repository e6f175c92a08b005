import Dispatch
import HTTPClient
import HTTPCore
import HTTPTypes
import Synchronization
import Testing
import TestSupport

/// Bounded robustness run: an upstream answering with mutated (bit flips, cuts, inserted bytes)
/// versions of valid responses, then closing. Every exchange must end — finish or fail with a
/// typed error — never hang or crash, and the client must keep serving the next one.
@Suite("HTTPClient against a mutating upstream")
struct MalformedUpstreamTests {
    static let responses: [String] = [
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n0\r\nT: 1\r\n\r\n",
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
        "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close",
        "HTTP/1.1 304 Not Modified\r\nETag: \"a\"\r\n\r\n",
    ]

    @Test func everyExchangeEndsWhateverTheUpstreamSends() {
        let count = 150
        var rng = SplitMix64(seed: 0x5EED)
        var plans: [[UInt8]] = []
        for i in 0..<count {
            var bytes = Array(Self.responses[i % Self.responses.count].utf8)
            if i >= Self.responses.count {  // the first round unmodified
                for _ in 0..<Int.random(in: 1...3, using: &rng) {
                    switch Int.random(in: 0..<3, using: &rng) {
                    case 0: bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= UInt8(1 << Int.random(in: 0..<8, using: &rng))
                    case 1: bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &rng)))
                    default: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: Int.random(in: 0...bytes.count, using: &rng))
                    }
                    if bytes.isEmpty { bytes = [0x48] }
                }
            }
            plans.append(bytes)
        }
        let shared = plans
        let upstream = TestUpstream { connection, index in
            guard index < shared.count, connection.readRequest() != nil else { return }
            connection.write(shared[index])
        }
        defer { upstream.stop() }
        let (client, loop, _) = makeClient(ports: [upstream.port]) { $0.readTimeout = .seconds(5) }
        var finished = 0, failed = 0
        for i in 0..<count {
            // One connection per exchange: the upstream closes after each answer.
            let r = run(client, request("/\(i)", fields: [.connection: "close"]), on: loop)
            #expect(r.finished || r.error != nil, "exchange \(i) did not end")
            if r.finished { finished += 1 } else { failed += 1 }
            if i < Self.responses.count { #expect(r.finished, "valid response \(i) failed: \(String(describing: r.error))") }
            if case .timedOut? = r.error { Issue.record("exchange \(i) hung until the read timeout") }
        }
        #expect(finished + failed == count)
        #expect(failed > 0)
    }
}
