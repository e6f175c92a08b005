import DCServe
import DictionaryCodec
import DictionaryTransport
import Foundation
import HTTPTypes

// libFuzzer entry point for dcserve's parsers of outside input. DCSERVE_FUZZ_MODE picks the parser:
//
//   accept-encoding   AcceptEncoding over 1–3 field lines (split at NUL), every coding's weight
//   dictionary-fields Available-Dictionary, Dictionary-ID and Use-As-Dictionary (field lines split at
//                     NUL), parsed alone and as fields, re-serialised Use-As-Dictionary re-parsed
//   negotiation       Negotiation.decide over arbitrary request fields (name:value lines)
//   url-pattern       URLPattern (config `match` and advertised `match`) against a base, then
//                     matches(path:) on the rest of the input; URLPatternBase(url:) on it too
//   decode            dcb/dcz/br/zstd/gzip decoding of arbitrary bytes with an arbitrary dictionary
//                     (the `decompress` command's input), output capped at 1 MiB
//   config            ConfigurationLoader on arbitrary JSON (no environment overrides), in memory
//   client-response   DictionaryClient's handling of a response (ClientResponseFuzz.swift)
//   history-path      history dictionary URL paths and group values (HistoryPathFuzz.swift)
//   partition         partition ids from request/response fields and cookies (PartitionFuzz.swift)
//   lab               the lab's JSON plan, and the lab server's answer to any request (LabFuzz.swift)
//   header-fields     Cache-Control lifetimes, conditional requests, Vary, trusted proxies, route and
//                     document paths (HeaderFieldsFuzz.swift)
//   upstream-response the proxy's handling of an upstream's response head and body: hop-by-hop and
//                     Connection-listed fields removed, Via, body decoded to identity (UpstreamResponseFuzz.swift)
//   zstd-differential the pure-Swift zstd decoder against libzstd: a dictionary and zstd frames,
//                     same output or both refuse (ZstdDifferentialFuzz.swift)
//   connection        a script of events (client reads and writes, handler answers, streams, body
//                     reads, cancels, closes, deadlines, shutdown) against a server connection over an
//                     in-memory transport, its output checked after each event (ConnectionFuzz.swift)
//
// Invariants: no crash, no hang, no unbounded memory; parse results are self-consistent
// (weights in 0...1000, a re-serialised Use-As-Dictionary parses to the same value, decoded output
// within the limit). A precondition failure or sanitizer report is a finding.

enum FuzzMode: String, CaseIterable {
    case acceptEncoding = "accept-encoding"
    case dictionaryFields = "dictionary-fields"
    case negotiation
    case urlPattern = "url-pattern"
    case decode
    case config
    case clientResponse = "client-response"
    case historyPath = "history-path"
    case partition
    case lab
    case headerFields = "header-fields"
    case upstreamResponse = "upstream-response"
    case zstdDifferential = "zstd-differential"
    case connection

    static let current: FuzzMode = {
        let name = ProcessInfo.processInfo.environment["DCSERVE_FUZZ_MODE"] ?? ""
        guard let mode = FuzzMode(rawValue: name) else {
            let names = FuzzMode.allCases.map(\.rawValue).joined(separator: ", ")
            FileHandle.standardError.write(Data("set DCSERVE_FUZZ_MODE to one of: \(names)\n".utf8))
            exit(2)
        }
        return mode
    }()
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    switch FuzzMode.current {
    case .acceptEncoding: fuzzAcceptEncoding(bytes)
    case .dictionaryFields: fuzzDictionaryFields(bytes)
    case .negotiation: fuzzNegotiation(bytes)
    case .urlPattern: fuzzURLPattern(bytes)
    case .decode: fuzzDecode(bytes)
    case .config: fuzzConfig(bytes)
    case .clientResponse: fuzzClientResponse(bytes)
    case .historyPath: fuzzHistoryPath(bytes)
    case .partition: fuzzPartition(bytes)
    case .lab: fuzzLab(bytes)
    case .headerFields: fuzzHeaderFields(bytes)
    case .upstreamResponse: fuzzUpstreamResponse(bytes)
    case .zstdDifferential: fuzzZstdDifferential(bytes)
    case .connection: fuzzConnection(bytes)
    }
    return 0
}

/// Field values as a client could send them: split at NUL, as (lossily decoded) strings.
func fieldValues(_ bytes: [UInt8], max: Int) -> [String] {
    bytes.split(separator: 0, maxSplits: max - 1, omittingEmptySubsequences: false)
        .map { String(decoding: $0, as: UTF8.self) }
}

func fields(_ name: HTTPField.Name, _ values: [String]) -> HTTPFields {
    var f = HTTPFields()
    for v in values { f.append(HTTPField(name: name, value: v)) }
    return f
}

func fuzzAcceptEncoding(_ bytes: [UInt8]) {
    let values = fieldValues(bytes, max: 3)
    for accept in [AcceptEncoding(fields(.acceptEncoding, values)), AcceptEncoding(fieldValue: values[0])] {
        for coding in ContentCoding.allCases {
            let w = accept.weight(of: coding)
            precondition((0...1000).contains(w), "weight \(w) out of range")
            precondition(accept.accepts(coding) == (w > 0))
        }
        _ = accept.acceptsAny(of: ContentCoding.allCases)
        // An unlisted identity (no `*`) ranks below every coding listed with a weight above 0.
        if accept.weights["identity"] == nil && accept.wildcardWeight == nil {
            for (_, w) in accept.weights where w > 0 {
                precondition(accept.weight(of: .identity) <= w, "unlisted identity above a listed coding")
            }
            precondition(accept.accepts(.identity), "unlisted identity refused without `*;q=0`")
        }
    }
}

func fuzzDictionaryFields(_ bytes: [UInt8]) {
    let values = fieldValues(bytes, max: 3)
    let available = HTTPField.Name("Available-Dictionary")!, id = HTTPField.Name("Dictionary-ID")!
    let use = HTTPField.Name("Use-As-Dictionary")!
    for v in values {
        if case .present(let a) = AvailableDictionary.parse(fieldValue: v) { precondition(a.hash.bytes.count == 32) }
        _ = DictionaryID.parse(fieldValue: v)
        if let parsed = try? UseAsDictionary(fieldValue: v), let again = try? parsed.fieldValue() {
            let reparsed = try? UseAsDictionary(fieldValue: again)
            precondition(reparsed?.match == parsed.match && reparsed?.matchDestinations == parsed.matchDestinations,
                         "Use-As-Dictionary does not survive a round trip: \(v) → \(again)")
        }
    }
    _ = AvailableDictionary.parse(fields(available, values))
    _ = DictionaryID.parse(fields(id, values))
    _ = try? UseAsDictionary.parse(fields(use, values))
}

func fuzzNegotiation(_ bytes: [UInt8]) {
    var request = HTTPFields()
    for line in bytes.split(separator: 0x0A, maxSplits: 15) {
        guard let colon = line.firstIndex(of: 0x3A),
              let name = HTTPField.Name(String(decoding: line[..<colon], as: UTF8.self)) else { continue }
        request.append(HTTPField(name: name, value: String(decoding: line[(colon + 1)...], as: UTF8.self)))
    }
    let response: HTTPFields = [.contentType: "text/javascript", .cacheControl: "max-age=60"]
    let pattern = try! URLPattern("/static/app.*.js", base: nil)
    let stored = DictionaryCandidate(hash: DictionaryHash(bytes: [UInt8](repeating: 0x53, count: 32))!, pattern: pattern)
    let decision = Negotiation.decide(request: request, path: "/static/app.v2.js", response: response, bodySize: 10_000,
                                      policy: NegotiationPolicy(), knownSizes: [.dcb: 500, .dcz: 600]) { hash in
        hash == stored.hash ? stored : DictionaryCandidate(hash: hash, pattern: pattern)
    }
    if case .dictionary(let coding, _) = decision { precondition(coding.usesDictionary) }
}

let patternBase = URLPatternBase(url: "https://example.com/static/app.v1.js")!

func fuzzURLPattern(_ bytes: [UInt8]) {
    let parts = fieldValues(bytes, max: 2)
    _ = URLPatternBase(url: parts[0])
    for base in [patternBase, nil] as [URLPatternBase?] {
        guard let pattern = try? URLPattern(parts[0], base: base) else { continue }
        _ = pattern.matches(path: parts.count > 1 ? parts[1] : "/")
        _ = pattern.matches(path: pattern.pathname)
        // The resolved pathname is itself a valid pattern (the store keeps it and re-parses it).
        precondition((try? URLPattern(pattern.pathname, base: nil)) != nil, "resolved pathname does not re-parse: \(pattern.pathname)")
    }
}

func fuzzDecode(_ bytes: [UInt8]) {
    guard bytes.count >= 2 else { return }
    let codings: [ContentCoding] = [.dcb, .dcz, .br, .zstd, .gzip]
    let coding = codings[Int(bytes[0]) % codings.count]
    let dictionaryLength = min(Int(bytes[1]), bytes.count - 2)
    let dictionaryBytes = Array(bytes[2..<(2 + dictionaryLength)])
    let body = Array(bytes[(2 + dictionaryLength)...])
    let limits = DecodeLimits(maxOutput: 1 << 20)
    let dictionary = coding.usesDictionary ? CompressionDictionary(bytes: dictionaryBytes) : nil
    if let out = try? coding.decode(body, dictionary: dictionary, limits: limits) {
        precondition(out.count <= 1 << 20, "decoded past the limit")
    }
    _ = try? DictionaryFrameHeader.parse(body)
    // The body with a correct header for this dictionary, so the fuzzer reaches the decoders themselves.
    if let dictionary {
        let framed = DictionaryFrameHeader(coding: coding, hash: dictionary.hash).bytes + body
        if let out = try? coding.decode(framed, dictionary: dictionary, limits: limits) {
            precondition(out.count <= 1 << 20, "decoded past the limit")
        }
    }
}

func fuzzConfig(_ bytes: [UInt8]) {
    _ = try? ConfigurationLoader.load(contents: bytes, file: "fuzz.json", environment: [:])
}
