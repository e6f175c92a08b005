import HTTPCore
import HTTPServer
import HTTPTypes

/// The response fields ``DictionaryCompressionMiddleware/triage(_:_:)`` decides on, read in one pass
/// over the head (a proxied response's head is walked once instead of once per field looked up, and
/// no joined strings are built for the common single-line case). Same answers as the field
/// subscripts they replace: `contentEncoding`/`contentType` equal `fields[name]` (several lines
/// joined with ", "), `forbidsTransform` equals ``ProxyResponseHeaders/forbidsTransform(_:)``, and
/// `hasVary` tells whether any `Vary` line exists. A value; thread-safe.
struct TriageFields {
    var contentEncoding: String?
    var contentType: String?
    var forbidsTransform = false
    var hasVary = false

    /// The fields of `response`'s head, read from a forwarded head's bytes without building it.
    init(_ response: HTTPServerResponse) {
        guard let forwarded = response.forwarded else { self = TriageFields(response.head.headerFields); return }
        var encodingLines = 0, typeLines = 0
        var contentEncoding: String?, contentType: String?, forbidsTransform = false, hasVary = false
        forwarded.forEachKeptField { name, value in
            @inline(__always) func named(_ literal: StaticString) -> Bool { asciiCaseInsensitiveEquals(name, literal) }
            switch name.count {
            case 16 where named("content-encoding"):
                encodingLines += 1
                if encodingLines == 1 { contentEncoding = String(decoding: value, as: UTF8.self) }
            case 12 where named("content-type"):
                typeLines += 1
                if typeLines == 1 { contentType = String(decoding: value, as: UTF8.self) }
            case 13 where named("cache-control"):
                if !forbidsTransform && ProxyResponseHeaders.forbidsTransform(cacheControl: String(decoding: value, as: UTF8.self)) {
                    forbidsTransform = true
                }
            case 4 where named("vary"):
                hasVary = true
            default:
                break
            }
        }
        let appended = TriageFields(forwarded.appended)
        self.hasVary = hasVary || appended.hasVary
        self.forbidsTransform = forbidsTransform || appended.forbidsTransform
        // Several lines (or appended ones): exactly what the subscript answers (the rare case keeps its cost).
        self.contentEncoding = encodingLines > 1 || appended.contentEncoding != nil ? forwarded.value(.contentEncoding) : contentEncoding
        self.contentType = typeLines > 1 || appended.contentType != nil ? forwarded.value(.contentType) : contentType
    }

    init(_ fields: HTTPFields) {
        var encodingLines = 0, typeLines = 0
        for field in fields {
            // By length first: most names match none of these, and a failed String == is a call.
            switch field.name.canonicalName.utf8.count {
            case 16 where field.name == .contentEncoding:
                encodingLines += 1
                if encodingLines == 1 { contentEncoding = field.value }
            case 12 where field.name == .contentType:
                typeLines += 1
                if typeLines == 1 { contentType = field.value }
            case 13 where field.name == .cacheControl:
                if !forbidsTransform && ProxyResponseHeaders.forbidsTransform(cacheControl: field.value) { forbidsTransform = true }
            case 4 where field.name == .vary:
                hasVary = true
            default:
                continue
            }
        }
        // Several lines: exactly what the subscript answers (the rare case keeps its cost).
        if encodingLines > 1 { contentEncoding = fields[.contentEncoding] }
        if typeLines > 1 { contentType = fields[.contentType] }
    }
}
