import DictionaryClient
import DictionaryClientSystemCodecs
import DictionaryCodec
import Foundation
import HTTPTypes
import Testing
import TestSupport

/// Random inputs to every parser of outside input in the client (Cache-Control, Age, Date/Expires,
/// Use-As-Dictionary incl. ttl, Link, Content-Encoding, dcb/dcz bodies): bounded counts, fixed seed,
/// each run must end in a value or a typed error, never a trap.
@Suite struct RobustnessTests {
    func randomText(_ rng: inout SplitMix64, alphabet: [UInt8], maxLength: Int) -> String {
        let count = Int.random(in: 0...maxLength, using: &rng)
        return String(decoding: (0..<count).map { _ in alphabet.randomElement(using: &rng)! }, as: UTF8.self)
    }

    @Test func randomResponseFieldsNeverTrap() throws {
        var rng = SplitMix64(seed: 9842)
        let clock = TestClock()
        let client = try memoryClient(clock)
        let alphabet = Array("max-age=0123456789,; \"no-store stale-while-revalidate must-revalidate ttl match=/*(){}:id type=raw dest \\".utf8)
        let dates = ["Sun, 06 Nov 1994 08:49:37 GMT", "Thu, 01 Jan 2099 00:00:00 GMT", "yesterday", "", "Mon, 99 Foo 2026 99:99:99 GMT"]
        for i in 0..<1500 {
            var f = HTTPFields()
            f.append(HTTPField(name: .cacheControl, value: randomText(&rng, alphabet: alphabet, maxLength: 60)))
            f.append(HTTPField(name: .useAsDictionary, value: randomText(&rng, alphabet: alphabet, maxLength: 60)))
            if Bool.random(using: &rng) { f.append(HTTPField(name: .age, value: randomText(&rng, alphabet: Array("0123456789-x ".utf8), maxLength: 25))) }
            if Bool.random(using: &rng) { f.append(HTTPField(name: .date, value: dates.randomElement(using: &rng)!)) }
            if Bool.random(using: &rng) { f.append(HTTPField(name: .expires, value: dates.randomElement(using: &rng)!)) }
            if Bool.random(using: &rng) { f.append(HTTPField(name: HTTPField.Name("Link")!, value: randomText(&rng, alphabet: alphabet + Array("<>".utf8), maxLength: 60))) }
            let request = try client.prepare(url: "https://example.com/r/\(i)")
            let response = try client.process(ClientResponse(status: 200, fields: f, body: bytes("body \(i)")), for: request)
            if let entry = response.registeredEntry { #expect(entry.expiresAt > clock.now) }
        }
    }

    @Test func randomDictionaryBodiesFailWithTypedErrors() throws {
        var rng = SplitMix64(seed: 42)
        let client = try memoryClient(TestClock())
        try register(client, url: "https://example.com/d", body: sampleText(1, count: 3000), useAsDictionary: #"match="/x/*""#)
        let request = try client.prepare(url: "https://example.com/x/1")
        let dictionary = try #require(request.dictionary)
        let good = [try DCZ.encode(sampleText(2, count: 4000), dictionary: dictionary, level: 3),
                    try DCB.encode(sampleText(2, count: 4000), dictionary: dictionary, level: 5)]
        for i in 0..<600 {
            let coding = i % 2 == 0 ? "dcz" : "dcb"
            var body = good[i % 2]
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                let at = Int.random(in: 0..<body.count, using: &rng)
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: body[at] = UInt8.random(in: 0...255, using: &rng)
                case 1: body.removeSubrange(at..<min(body.count, at + 7))
                default: body.insert(UInt8.random(in: 0...255, using: &rng), at: at)
                }
                if body.isEmpty { body = [0] }
            }
            do {
                let r = try client.process(ClientResponse(status: 200, fields: fields(("content-encoding", coding)), body: body), for: request)
                // dcz frames carry a checksum, so a mutated frame that decodes decoded to the original;
                // brotli has no checksum, so a dcb mutation in literal bytes can decode to other bytes.
                if coding == "dcz" { #expect(r.body == sampleText(2, count: 4000)) }
            } catch {
                #expect(error is DictionaryClientError)
            }
        }
    }
}
