import DictionaryCodec
import DictionaryTransport
import Foundation
import HTTPServer
import HTTPTypes

/// Out-of-band dictionaries (RFC 9842 §3): serves each configured dictionary file at its path with
/// `Use-As-Dictionary`, a fresh `Cache-Control` and `Access-Control-Allow-Origin` (browsers fetch it
/// in CORS mode), and adds `Link: <path>; rel="compression-dictionary"` to responses for the pages
/// that advertise it.
///
/// The dictionary bytes are read, hashed and put in the store once at start-up (so requests naming
/// their hash get dcb/dcz through the compression middleware); the served bytes are those same bytes.
/// Immutable after init; thread-safe.
public struct OutOfBandDictionaryMiddleware: HTTPMiddleware {
    struct Entry: Sendable {
        let path: String
        let bytes: [UInt8]
        let hash: DictionaryHash
        let headerValue: String
        let maxAge: Int
        let allowOrigin: String?
        let advertiseOn: URLPattern
    }

    let entries: [Entry]
    static let link = HTTPField.Name("Link")!

    /// Loads and stores every out-of-band dictionary; throws `ConfigurationError` naming the entry
    /// when a file cannot be read or stored.
    public init(_ dictionaries: [OutOfBandDictionary], store: any DictionaryStore, now: Date = Date()) throws {
        entries = try dictionaries.map { d in
            let key = "outOfBand.\(d.name)"
            guard let data = FileManager.default.contents(atPath: d.file), !data.isEmpty else {
                throw ConfigurationError(key: "\(key).file", "cannot read \(d.file) (or it is empty)")
            }
            let bytes = [UInt8](data)
            let match: URLPattern, advertiseOn: URLPattern
            do {
                match = try URLPattern(d.match, base: nil)
                advertiseOn = try URLPattern(d.advertiseOn, base: nil)
            } catch {
                throw ConfigurationError(key: key, "\(error)")
            }
            let id = d.id.flatMap(DictionaryID.init)
            let advertisement = UseAsDictionary(match: d.match, matchDestinations: d.matchDest, id: id)
            let hash: DictionaryHash
            do {
                hash = try store.put(bytes, description: DictionaryDescription(
                    pattern: match, matchDestinations: d.matchDest, id: id, rule: "outOfBand.\(d.name)",
                    sourcePath: d.path, maxAge: d.maxAgeSeconds), now: now)
            } catch {
                throw ConfigurationError(key: "\(key).file", "cannot store the dictionary: \(error)")
            }
            return Entry(path: d.path, bytes: bytes, hash: hash, headerValue: try advertisement.fieldValue(),
                         maxAge: d.maxAgeSeconds, allowOrigin: d.allowOrigin, advertiseOn: advertiseOn)
        }
    }

    public func handle(_ request: HTTPServerRequest, next: any HTTPHandler,
                       respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        let path = request.pathWithoutQuery
        if let entry = entries.first(where: { $0.path == path }) {
            return respond(dictionaryResponse(entry, request))
        }
        let links = entries.filter { $0.advertiseOn.matches(path: path) }
        guard !links.isEmpty else { return next.handle(request, respond: respond) }
        next.handle(request) { (out: consuming HTTPServerResponse) in
            if out.statusCode == 200 || out.statusCode == 304 {
                for entry in links {
                    out.appendHeader(HTTPField(name: Self.link, value: "<\(entry.path)>; rel=\"compression-dictionary\""))
                }
            }
            respond(out)
        }
    }

    func dictionaryResponse(_ entry: Entry, _ request: HTTPServerRequest) -> HTTPServerResponse {
        guard request.method == .get || request.method == .head else {
            return .text(.methodNotAllowed, "405 Method Not Allowed: dictionaries are served to GET and HEAD",
                         headerFields: [.allow: "GET, HEAD"])
        }
        var fields = HTTPFields()
        fields[.contentType] = "application/octet-stream"
        fields[.useAsDictionary] = entry.headerValue
        fields[.cacheControl] = "max-age=\(entry.maxAge)"
        fields[.eTag] = "\"\(entry.hash.hex)\""
        if let origin = entry.allowOrigin { fields[.accessControlAllowOrigin] = origin }
        if request.head.headerFields[values: .ifNoneMatch].contains(where: { ConditionalRequest.matches([$0], fields[.eTag]!) }) {
            fields[.contentType] = nil
            return HTTPServerResponse(status: .notModified, headerFields: fields)
        }
        var response = HTTPServerResponse(status: .ok, headerFields: fields, body: .bytes(entry.bytes))
        response.isContentAddressed = true  // a configured dictionary file: one path, one content
        return response
    }
}
