import DictionaryCodec
import DictionaryTransport
import Foundation
import HTTPServer
import HTTPTypes

/// Answers a request for one scenario resource (``LabScenarioCatalog/Resource``) and says what it
/// served. Dictionary codings are used exactly as a conforming server would (RFC 9842 §6.2): only
/// when the request names one of the scenario's dictionaries and offers the coding (dcz preferred),
/// with `Vary: Accept-Encoding, Available-Dictionary`; the `wrongHash` resource deliberately breaks
/// that rule. Pure apart from the compression work; thread-safe.
enum LabResourceResponder {
    static let availableDictionary = HTTPField.Name("Available-Dictionary")!
    static let useAsDictionary = HTTPField.Name("Use-As-Dictionary")!
    static let link = HTTPField.Name("Link")!

    static func respond(
        run: String, scenario: LabScenarioCatalog.Scenario, resource name: String,
        _ resource: LabScenarioCatalog.Resource, request: HTTPFields, head: Bool
    ) -> (response: HTTPServerResponse, served: String) {
        var fields = HTTPFields()
        fields[.contentType] = name.hasSuffix(".html") ? "text/html; charset=utf-8" : "text/javascript; charset=utf-8"
        var body: [UInt8]
        var served = "identity"
        switch resource {
        case .dictionary(let dictionary, let useAsDictionary, let cacheControl):
            body = LabContent.dictionary(run: run, scenario: scenario.id, name: dictionary)
            let base = LabPlanBuilder.resourceURL(run: run, scenario: scenario.id, resource: "")
            fields[Self.useAsDictionary] = useAsDictionary.replacingOccurrences(of: "{base}", with: base)
                .replacingOccurrences(of: "{run}", with: run)
            fields[.cacheControl] = cacheControl
            served = "dictionary \(dictionary) (\(cacheControl))"
        case .page(let target):
            let url = LabPlanBuilder.resourceURL(run: run, scenario: scenario.id, resource: target)
            body = Array("<!doctype html><meta charset=utf-8><title>dcserve lab: Link</title><p>This page announces \(url) with Link: rel=compression-dictionary.\n".utf8)
            fields[Self.link] = "<\(url)>; rel=\"compression-dictionary\""
            fields[.cacheControl] = "no-store"
            served = "page with Link to \(target)"
        case .content(let content):
            body = LabContent.content(run: run, scenario: scenario.id, name: content)
            fields[.cacheControl] = "no-store"
            fields[.vary] = "Accept-Encoding, Available-Dictionary"
            if let named = AvailableDictionary.parse(request).value,
               let dictionaryName = LabGrader.dictionaryNames(scenario).first(where: {
                   LabGrader.hash(run: run, scenario: scenario.id, dictionary: $0) == named.hash }),
               let coding = coding(for: request, scenario: scenario.id) {
                let dictionary = CompressionDictionary(
                    bytes: LabContent.dictionary(run: run, scenario: scenario.id, name: dictionaryName))
                if let encoded = try? encode(body, coding: coding, dictionary: dictionary) {
                    body = encoded
                    fields[.contentEncoding] = coding.rawValue
                    served = "\(coding) with dictionary \(dictionaryName)"
                }
            }
        case .wrongHash(let content):
            body = LabContent.content(run: run, scenario: scenario.id, name: content)
            fields[.cacheControl] = "no-store"
            fields[.vary] = "Accept-Encoding, Available-Dictionary"
            if AvailableDictionary.parse(request).value != nil, let coding = coding(for: request, scenario: scenario.id) {
                let decoy = CompressionDictionary(bytes: LabContent.decoy(run: run, scenario: scenario.id))
                if let encoded = try? encode(body, coding: coding, dictionary: decoy) {
                    body = encoded
                    fields[.contentEncoding] = coding.rawValue
                    served = "\(coding) made with a decoy dictionary \(decoy.hash.hex.prefix(16))… (header names it, not the dictionary advertised)"
                }
            }
        }
        var response = HTTPServerResponse(status: .ok, headerFields: fields, body: .bytes(head ? [] : body))
        if head { response.headLength = .announced(Int64(body.count)) }
        return (response, served)
    }

    /// Scenarios whose deltas are sent as dcb when the client offers it (the others prefer dcz), so a
    /// client that offers both is tested with both decoders.
    static let dcbFirst: Set<String> = ["longest-match", "single-available-dictionary", "wrong-hash"]

    /// The preferred coding of `scenario` when offered, else the other one when offered, else nil.
    static func coding(for request: HTTPFields, scenario: String) -> ContentCoding? {
        let accept = AcceptEncoding(request)
        let order: [ContentCoding] = dcbFirst.contains(scenario) ? [.dcb, .dcz] : [.dcz, .dcb]
        return order.first { accept.accepts($0) }
    }

    static func encode(_ body: [UInt8], coding: ContentCoding, dictionary: CompressionDictionary) throws -> [UInt8] {
        switch coding {
        case .dcz: try DCZ.encode(body, dictionary: dictionary, level: 3)
        default: try DCB.encode(body, dictionary: dictionary, level: 5)
        }
    }
}
