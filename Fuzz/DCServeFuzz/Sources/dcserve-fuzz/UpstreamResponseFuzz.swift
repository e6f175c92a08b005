@testable import DCServe
@testable import DictionaryTransport
import HTTPClient
import HTTPCore
@testable import HTTPServer
import HTTPTypes

// Mode `upstream-response`: what the reverse proxy does with an upstream's response once the client's
// ResponseParser has read its head (that parser has its own fuzzer): the head cleaned for the client
// (ProxyResponseHeaders, both the one-pass form from the parsed head and the two-step form from an
// HTTPResponse), the same head as a forwarded head (received bytes plus edits, written by the server
// without building fields), and the body decoded to identity (UpstreamBodyDecoder: Content-Encoding, no-transform,
// the ETag of the decoded representation, the size cap).
//
// Input: byte 0's bit 0 picks the Via policy (on/off); the rest is the upstream's byte stream: a head
// (parsed with default limits; an input without a complete, valid head stops there) and what follows it,
// taken as the whole body.
//
// Invariants: the forwarded head stands for the same head and is written as the same bytes (Date lines
// aside: the server adds its own clock's when the upstream sent none), and the response's field
// accessors answer from it as the built head's fields do; both forms give the same head (status, reason, field names and values in order); no
// hop-by-hop field and no field named in a `Connection` line reaches the client; every other upstream
// field does, in order; with the policy on, exactly one Via, last, ending in ours. Decoding: nothing is
// decoded under no-transform; a decoded body is within the cap and its head has no Content-Encoding, the
// upstream's other fields unchanged, and a strong/weak ETag kept strong/weak and marked `-identity`.

let upstreamDecodeCap = 1 << 16

func fuzzUpstreamResponse(_ bytes: [UInt8]) {
    guard let flags = bytes.first else { return }
    let stream = Array(bytes.dropFirst())
    var parser = ResponseParser()
    parser.expectResponse(toHEAD: false)
    var offset = 0
    var parsedHead: ParsedResponseHead?
    while parsedHead == nil, offset < stream.count {
        guard let (consumed, event) = try? stream[offset...].withUnsafeBytes({ try parser.parse($0) }) else { return }
        offset += consumed
        switch event {
        case .head(let head): parsedHead = head
        case .informational: continue
        default: return
        }
        if consumed == 0 { return }
    }
    guard let head = parsedHead else { return }

    var policy = ProxyHeaderPolicy()
    policy.via = flags & 1 == 1
    let onePass = ProxyResponseHeaders.make(head, policy: policy)
    let upstream = head.makeHTTPResponse()
    let twoSteps = ProxyResponseHeaders.make(upstream, policy: policy)
    precondition(onePass == twoSteps, "one-pass head differs: \(onePass) vs \(twoSteps)")
    precondition(onePass.status.reasonPhrase == twoSteps.status.reasonPhrase, "reason differs")
    precondition(onePass.headerFields.map(\.name.rawName) == twoSteps.headerFields.map(\.name.rawName), "names differ")

    // The forwarded form: the same head, the same bytes on the wire, the same answers.
    let forwarded = ProxyResponseHeaders.forwarded(head, policy: policy)
    precondition(forwarded.response == onePass, "forwarded head differs: \(forwarded.response) vs \(onePass)")
    var direct: [UInt8] = [], built: [UInt8] = []
    ResponseWriter.appendHead(forwarded, framing: .contentLength(7), keepAlive: flags & 2 == 0, requestVersion: .http1_1,
                              serverLine: Array("Server: s\r\n".utf8), into: &direct)
    ResponseWriter.appendHead(onePass, framing: .contentLength(7), keepAlive: flags & 2 == 0, requestVersion: .http1_1,
                              serverLine: Array("Server: s\r\n".utf8), into: &built)
    func withoutDateLines(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        bytes.split(separator: 0x0A, omittingEmptySubsequences: false).filter { !$0.starts(with: Array("Date: ".utf8)) }
    }
    precondition(withoutDateLines(direct) == withoutDateLines(built), "forwarded head written differently")
    let response = HTTPServerResponse(forwarded: forwarded)
    precondition(response.statusCode == onePass.status.code, "status differs")
    for name: HTTPField.Name in [.contentType, .contentEncoding, .cacheControl, .eTag, .vary, .date, .setCookie, .lastModified] {
        precondition(response.headerValue(name) == onePass.headerFields[name], "\(name) value differs")
        precondition(response.headerValues(name) == onePass.headerFields[values: name], "\(name) values differ")
        precondition(response.hasHeader(name) == onePass.headerFields.contains(name), "\(name) presence differs")
    }
    let quick = TriageFields(response), full = TriageFields(onePass.headerFields)
    precondition(quick.precompressed == full.precompressed && quick.contentEncoding == full.contentEncoding
                 && quick.forbidsTransform == full.forbidsTransform && quick.hasVary == full.hasVary, "triage fields differ")
    if let contentType = onePass.headerFields[.contentType] {
        // The byte-level media-type check against the rules on Characters it replaces.
        precondition(CompressionEligibility.isPrecompressed(contentType: contentType)
                     == CompressionEligibility.isPrecompressedByCharacters(contentType), "precompressed type differs")
    }
    precondition(ProxyResponseHeaders.forbidsTransform(response) == ProxyResponseHeaders.forbidsTransform(onePass.headerFields),
                 "no-transform differs")

    // What reaches the client: the upstream's fields minus hop-by-hop and Connection-listed ones.
    let listed = HopByHopFields.connectionListed(in: upstream.headerFields)
    var expected = Array(upstream.headerFields).filter { !HopByHopFields.names.contains($0.name) && !listed.contains($0.name) }
    if policy.via { expected.removeAll { $0.name == ProxyRequestHeaders.via } }
    var sent = Array(onePass.headerFields)
    if policy.via {
        precondition(sent.last?.name == ProxyRequestHeaders.via && sent.last!.value.hasSuffix(policy.via11),
                     "our Via is not last")
        sent.removeLast()
        precondition(!sent.contains { $0.name == ProxyRequestHeaders.via }, "a second Via")
    }
    precondition(sent == expected, "fields lost or leaked: \(sent) vs \(expected)")

    // The body: everything after the head, decoded as the relay does for a buffered body.
    let body = Array(stream[offset...])
    let forbids = ProxyResponseHeaders.forbidsTransform(onePass.headerFields)
    switch UpstreamBodyDecoder.decode(onePass.headerFields, body: body, maxDecodedBytes: upstreamDecodeCap) {
    case .unchanged, .failed:
        break
    case .decoded(let fields, let decoded):
        precondition(!forbids, "decoded under no-transform")
        precondition(decoded.count <= upstreamDecodeCap, "decoded \(decoded.count) bytes over the cap")
        precondition(fields[.contentEncoding] == nil, "Content-Encoding left on the identity head")
        if let etag = onePass.headerFields[.eTag] {
            let identity = fields[.eTag] ?? ""
            precondition(identity.hasPrefix("W/") == etag.hasPrefix("W/") && identity.hasSuffix("-identity\""),
                         "identity ETag \(identity) for \(etag)")
        }
        let others = { (f: HTTPFields) in Array(f).filter { $0.name != .contentEncoding && $0.name != .eTag } }
        precondition(others(fields) == others(onePass.headerFields), "decoding changed other fields")
    }
}
