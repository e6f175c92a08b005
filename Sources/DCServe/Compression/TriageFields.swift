import DictionaryTransport
import HTTPCore
import HTTPServer
import HTTPTypes

/// The response fields ``DictionaryCompressionMiddleware/triage(_:_:)`` decides on, read in one pass
/// over the head (a proxied response's head is walked once instead of once per field looked up, and
/// no joined strings are built for the common single-line case). Same answers as the field
/// subscripts they replace: `contentEncoding` equals `fields[name]` (several lines joined with ", "),
/// `precompressed` is ``CompressionEligibility/isPrecompressed(contentType:)`` of `fields[.contentType]`
/// (read from a forwarded head's bytes without a String), `forbidsTransform` equals
/// ``ProxyResponseHeaders/forbidsTransform(_:)``, and `hasVary` tells whether any `Vary` line exists.
/// A value; thread-safe.
struct TriageFields {
    var contentEncoding: String?
    var precompressed = false
    var forbidsTransform = false
    var hasVary = false

    /// Lines seen of the fields whose value is kept from the first line.
    private var encodingLines = 0, typeLines = 0

    /// The fields of `response`'s head, read from a forwarded head's bytes without building it.
    init(_ response: borrowing HTTPServerResponse) {
        guard let forwarded = response.forwarded else { self = TriageFields(response.head.headerFields); return }
        forwarded.forEachKeptField { name, value in
            take(name, value: { String(decoding: value, as: UTF8.self) },
                 precompressedType: { CompressionEligibility.isPrecompressed(contentTypeBytes: value) })
        }
        for field in forwarded.appended { take(field) }
        // Several lines: exactly what the subscript answers (the rare case keeps its cost).
        if encodingLines > 1 { contentEncoding = forwarded.value(.contentEncoding) }
        if typeLines > 1 { precompressed = CompressionEligibility.isPrecompressed(contentType: forwarded.value(.contentType)) }
    }

    init(_ fields: HTTPFields) {
        for field in fields { take(field) }
        // Several lines: exactly what the subscript answers (the rare case keeps its cost).
        if encodingLines > 1 { contentEncoding = fields[.contentEncoding] }
        if typeLines > 1 { precompressed = CompressionEligibility.isPrecompressed(contentType: fields[.contentType]) }
    }

    private mutating func take(_ field: HTTPField) {
        var canonical = field.name.canonicalName
        canonical.withUTF8 { name in
            take(name, value: { field.value }, precompressedType: { CompressionEligibility.isPrecompressed(contentType: field.value) })
        }
    }

    /// Takes one field into account: `name` in any case; `value` and `precompressedType` (its value as
    /// a `Content-Type`) asked for only by the fields decided on.
    private mutating func take(_ name: UnsafeBufferPointer<UInt8>, value: () -> String, precompressedType: () -> Bool) {
        // By length first: most names match none of these.
        switch name.count {
        case 16 where asciiCaseInsensitiveEquals(name, "content-encoding"):
            encodingLines += 1
            if encodingLines == 1 { contentEncoding = value() }
        case 12 where asciiCaseInsensitiveEquals(name, "content-type"):
            typeLines += 1
            if typeLines == 1 { precompressed = precompressedType() }
        case 13 where asciiCaseInsensitiveEquals(name, "cache-control"):
            if !forbidsTransform && ProxyResponseHeaders.forbidsTransform(cacheControl: value()) { forbidsTransform = true }
        case 4 where asciiCaseInsensitiveEquals(name, "vary"):
            hasVary = true
        default:
            break
        }
    }
}
