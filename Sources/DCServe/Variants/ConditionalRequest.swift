import Foundation
import HTTPCore
import HTTPServer
import HTTPTypes

/// The conditional fields of a GET/HEAD request (RFC 9110 §13): `If-Match`, `If-Unmodified-Since`,
/// `If-None-Match`, `If-Modified-Since`, evaluated by the compression middleware against the variant
/// it is about to send, in §13.2.2's order: a false `If-Match` (else `If-Unmodified-Since`) is a 412,
/// then a false `If-None-Match` (else `If-Modified-Since`) a 304.
///
/// `If-Match` asks whether the resource is still in the state the client knew. A variant's ETag
/// names that state plus the coding it was sent with (``VariantETag``), so the identity ETag and
/// every variant ETag made from it match (``VariantETag/namesState(_:identity:)``): strong
/// comparison of the state (a variant's tag is weak only because its bytes vary with the encode
/// level; any other weak tag never matches). `If-None-Match` compares weakly with the ETag of the
/// variant being sent (each variant is its own cache entry).
struct ConditionalRequest: Sendable {
    let ifNoneMatch: [String]
    let ifModifiedSince: String?
    let ifMatch: [String]
    let ifUnmodifiedSince: String?

    init(_ fields: HTTPFields) {
        var ifNoneMatch: [String] = [], ifMatch: [String] = []
        var ifModifiedSince: String?, ifUnmodifiedSince: String?
        for field in fields {
            // Every conditional name starts with "if-": one byte decides for most fields.
            guard field.name.canonicalName.utf8.first == UInt8(ascii: "i") else { continue }
            switch field.name {
            case .ifNoneMatch: ifNoneMatch.append(field.value)
            case .ifModifiedSince: ifModifiedSince = ifModifiedSince ?? field.value
            case .ifMatch: ifMatch.append(field.value)
            case .ifUnmodifiedSince: ifUnmodifiedSince = ifUnmodifiedSince ?? field.value
            default: break
            }
        }
        self.ifNoneMatch = ifNoneMatch
        self.ifModifiedSince = ifModifiedSince
        self.ifMatch = ifMatch
        self.ifUnmodifiedSince = ifUnmodifiedSince
    }

    /// True when the request carries any condition.
    var isPresent: Bool { !ifNoneMatch.isEmpty || ifModifiedSince != nil || !ifMatch.isEmpty || ifUnmodifiedSince != nil }

    /// The names of the fields a handler in front of this evaluation must not see.
    static let fieldNames: [HTTPField.Name] = [.ifNoneMatch, .ifModifiedSince, .ifMatch, .ifUnmodifiedSince]

    /// `response` itself, a 412 when `If-Match` / `If-Unmodified-Since` is false, or a 304 carrying
    /// the fields RFC 9110 §15.4.5 asks for when `If-None-Match` / `If-Modified-Since` says the
    /// client's copy is current. `identityETag`: the ETag of the identity representation `response`
    /// encodes (nil when it has none; read only for `If-Match`). Only 200 responses are evaluated.
    func evaluate(_ response: HTTPServerResponse, identityETag: @autoclosure () -> String?) -> HTTPServerResponse {
        guard isPresent, response.statusCode == 200 else { return response }
        // Read through the response's accessors: a forwarded head is not built for this.
        if !ifMatch.isEmpty {
            if !Self.matchesState(ifMatch, sent: response.headerValue(.eTag), identity: identityETag()) { return Self.preconditionFailed }
        } else if let since = ifUnmodifiedSince.flatMap(HTTPDate.parse),
                  let modified = response.headerValue(.lastModified).flatMap(HTTPDate.parse), modified > since {
            return Self.preconditionFailed
        }
        let notModified: Bool
        if !ifNoneMatch.isEmpty {
            guard let etag = response.headerValue(.eTag) else { return response }
            notModified = Self.matches(ifNoneMatch, etag)
        } else if let since = ifModifiedSince.flatMap(HTTPDate.parse),
                  let modified = response.headerValue(.lastModified).flatMap(HTTPDate.parse) {
            notModified = modified <= since
        } else {
            return response
        }
        guard notModified else { return response }
        var kept = HTTPFields()
        for name in [HTTPField.Name.eTag, .cacheControl, .vary, .lastModified, .expires, .contentLocation] {
            for value in response.headerValues(name) { kept.append(HTTPField(name: name, value: value)) }
        }
        return HTTPServerResponse(status: .notModified, headerFields: kept)
    }

    static var preconditionFailed: HTTPServerResponse {
        .text(.preconditionFailed, "412 Precondition Failed: the resource is not in the state the request names",
              headerFields: [.cacheControl: "no-store"])
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

    /// An `If-Match` list against the resource's state: `*` matches (a current representation exists);
    /// a tag matches when it is strong and equals the strong ETag being sent, or names the identity's
    /// state (``VariantETag/namesState(_:identity:)``).
    static func matchesState(_ values: [String], sent: String?, identity: String?) -> Bool {
        for value in values {
            for tag in value.fieldMembers(separatedBy: ",") {
                if tag == "*" { return true }
                if !tag.hasPrefix("W/"), let sent, !sent.hasPrefix("W/"), tag == sent { return true }
                if let identity, VariantETag.namesState(tag, identity: identity) { return true }
            }
        }
        return false
    }
}
