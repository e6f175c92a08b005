import DictionaryCodec
import HTTPTypes

/// The optional `Server-Timing` entry dcserve adds when `compression.serverTiming` is on:
/// `compress;desc="dcz-3";dur=0.412` for an encode in the request path (milliseconds), or
/// `compress;desc="dcz-19 cached"` when the variant came from the cache.
struct ServerTiming: Sendable {
    static let fieldName = HTTPField.Name("Server-Timing")!

    let coding: ContentCoding
    let level: Int
    /// Time spent encoding in this request; nil for a cached variant.
    let encodeTime: Duration?

    var fieldValue: String {
        guard let encodeTime else { return "compress;desc=\"\(coding)-\(level) cached\"" }
        let micros = encodeTime.components.seconds * 1_000_000 + encodeTime.components.attoseconds / 1_000_000_000_000
        return "compress;desc=\"\(coding)-\(level)\";dur=\(micros / 1000).\(String(1000 + micros % 1000).dropFirst())"
    }
}
