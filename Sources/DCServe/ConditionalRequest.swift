import Foundation
import HTTPCore
import HTTPServer
import HTTPTypes

/// `If-None-Match` / `If-Modified-Since` of a GET/HEAD request (RFC 9110 §13), evaluated by the
/// compression middleware against the variant it is about to send.
struct ConditionalRequest: Sendable {
    let ifNoneMatch: [String]
    let ifModifiedSince: String?

    init(_ fields: HTTPFields) {
        ifNoneMatch = fields[values: .ifNoneMatch]
        ifModifiedSince = fields[.ifModifiedSince]
    }

    /// True when the request carries either condition.
    var isPresent: Bool { !ifNoneMatch.isEmpty || ifModifiedSince != nil }

    /// `response` itself, or a 304 carrying the fields RFC 9110 §15.4.5 asks for when a condition
    /// says the client's copy is current. Only 200 responses are turned into 304s.
    func evaluate(_ response: HTTPServerResponse) -> HTTPServerResponse {
        guard isPresent, response.head.status == .ok else { return response }
        let fields = response.head.headerFields
        let notModified: Bool
        if !ifNoneMatch.isEmpty {
            guard let etag = fields[.eTag] else { return response }
            notModified = Self.matches(ifNoneMatch, etag)
        } else if let since = ifModifiedSince.flatMap(HTTPDate.parse),
                  let modified = fields[.lastModified].flatMap(HTTPDate.parse) {
            notModified = modified <= since
        } else {
            return response
        }
        guard notModified else { return response }
        var kept = HTTPFields()
        for name in [HTTPField.Name.eTag, .cacheControl, .vary, .lastModified, .expires, .contentLocation] {
            for value in fields[values: name] { kept.append(HTTPField(name: name, value: value)) }
        }
        return HTTPServerResponse(status: .notModified, headerFields: kept)
    }

    /// Weak comparison of an `If-None-Match` list with `etag`; `*` matches any current representation.
    static func matches(_ values: [String], _ etag: String) -> Bool {
        func opaque(_ tag: Substring) -> Substring { tag.hasPrefix("W/") ? tag.dropFirst(2) : tag }
        let target = opaque(etag[...])
        for value in values {
            for tag in value.fieldMembers(separatedBy: ",") where tag == "*" || opaque(tag) == target {
                return true
            }
        }
        return false
    }
}
