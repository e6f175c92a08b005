import DictionaryClient
import DictionaryClientSystemCodecs
import DictionaryCodec
import DictionaryTransport
import Foundation
import HTTPTypes

// Mode `client-response`: what DictionaryClient does with a response from a server it does not
// control (`dcserve fetch`, the lab runner): Content-Encoding list, body decoding with the advertised
// dictionary (dcb/dcz header check, then the codec), Use-As-Dictionary registration (URL pattern,
// match-dest, Cache-Control/Expires/Date/Age lifetime, ttl), Link: rel="compression-dictionary"
// references resolved against the request URL, and choosing the registered dictionary again.
//
// Input: head lines `name:value` (LF-separated) up to the first empty line, then the body. A first
// line starting with "http" is the request URL instead of a field (default https://example.com/static/app.v1.js).
//
// Invariants: decoded output ≤ the limit; at most CompressionDictionaryLink.maximumLinks references,
// each non-empty visible ASCII; a resolved link is a valid target that prints and re-parses to itself;
// an accepted dictionary has the body's size and hash, a positive lifetime, a match that parses
// against the URL, and only known destinations.

let clientDictionary = DictionaryBytes(Array(Array(repeating: Array("dcserve client fuzz dictionary: function export const return ".utf8), count: 4).joined()))
let clientDecoders = ResponseDecoders.systemLibraries
let clientDefaultTarget = ClientRequestTarget(url: "https://example.com/static/app.v1.js")!
let clientNow = Date(timeIntervalSince1970: 1_790_000_000)
let clientMaxOutput = 1 << 20

func splitHeadAndBody(_ bytes: [UInt8]) -> (lines: [ArraySlice<UInt8>], body: [UInt8]) {
    var i = 0
    while i + 1 < bytes.count, !(bytes[i] == 0x0A && bytes[i + 1] == 0x0A) { i += 1 }
    guard i + 1 < bytes.count else { return (bytes[...].split(separator: 0x0A, maxSplits: 31), []) }
    return (bytes[..<i].split(separator: 0x0A, maxSplits: 31), Array(bytes[(i + 2)...]))
}

func fuzzClientResponse(_ bytes: [UInt8]) {
    var (lines, body) = splitHeadAndBody(bytes)
    var target = clientDefaultTarget
    if let first = lines.first, first.starts(with: Array("http".utf8)) {
        lines.removeFirst()
        if let parsed = ClientRequestTarget(url: String(decoding: first, as: UTF8.self)) {
            target = parsed
            precondition(ClientRequestTarget(url: parsed.description) == parsed, "target does not re-parse: \(parsed)")
        }
    }
    var fields = HTTPFields()
    for line in lines {
        guard let colon = line.firstIndex(of: 0x3A),
              let name = HTTPField.Name(String(decoding: line[..<colon], as: UTF8.self)) else { continue }
        fields.append(HTTPField(name: name, value: String(decoding: line[(colon + 1)...], as: UTF8.self)))
    }

    // Body decoding: as sent, and (when the outermost coding is dcb/dcz) with a correct header for
    // the advertised dictionary, so the fuzzer reaches the codecs behind the header check.
    let codings = ResponseBodyDecoder.codings(fields)
    var decoded = body
    if let out = try? ResponseBodyDecoder.decode(body, codings: codings, advertised: clientDictionary, decoders: clientDecoders, maxOutput: clientMaxOutput) {
        precondition(out.count <= clientMaxOutput || codings.isEmpty, "decoded past the limit")
        decoded = out
    }
    if let last = codings.last, let coding = ContentCoding(token: last), coding.usesDictionary {
        let framed = DictionaryFrameHeader(coding: coding, hash: clientDictionary.hash).bytes + body
        if let out = try? ResponseBodyDecoder.decode(framed, codings: codings, advertised: clientDictionary, decoders: clientDecoders, maxOutput: clientMaxOutput) {
            precondition(out.count <= clientMaxOutput, "decoded past the limit")
            decoded = out
        }
    }

    // Registration.
    let status = fields[HTTPField.Name("Fuzz-Status")!].flatMap { Int($0) } ?? 200
    switch DictionaryRegistrar.evaluate(target: target, partition: "p", status: status, fields: fields,
                                        decodedBody: decoded, now: clientNow) {
    case .accepted(let entry):
        precondition(entry.size == decoded.count && entry.hashHex == SHA256.hash(decoded).hex)
        precondition(entry.expiresAt > entry.fetchedAt, "accepted with a non-positive lifetime")
        precondition((try? URLPattern(entry.match, base: target.patternBase)) != nil, "accepted match does not parse")
        precondition(entry.matchDestinations.allSatisfy(FetchDestination.known.contains))
        if let choice = DictionarySelector.select(from: [entry], target: target, destination: "", now: clientNow) {
            precondition(choice.dictionary == entry)
        }
    case .notADictionary, .rejected:
        break
    }
    if case .storable(let seconds) = DictionaryLifetime.compute(fields: fields, now: clientNow) {
        precondition(seconds > 0 && seconds.isFinite, "lifetime \(seconds)")
    }

    // Links.
    let references = CompressionDictionaryLink.references(in: fields[values: HTTPField.Name("Link")!])
    precondition(references.count <= CompressionDictionaryLink.maximumLinks)
    for reference in references {
        precondition(!reference.isEmpty && reference.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F })
        if let resolved = target.resolve(reference) {
            precondition(ClientRequestTarget(url: resolved.description) == resolved, "resolved link does not re-parse: \(resolved)")
        }
    }
}
