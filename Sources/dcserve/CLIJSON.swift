import Foundation

/// The JSON every `--json` of the command line prints: pretty, sorted keys, slashes unescaped, and
/// dates as RFC 3339 strings in UTC (`2026-11-27T10:48:31Z`), never seconds since 2001.
enum CLIJSON {
    static func encode(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return try encoder.encode(value)
    }

    /// `date` as an RFC 3339 string in UTC, as in the JSON.
    static func timestamp(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: date)
    }
}
