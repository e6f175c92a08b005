import Foundation

/// An HTTP Archive (HAR 1.2) reduced to what a replay needs: every entry as a ``RecordedExchange``,
/// ordered by `startedDateTime` (entries with equal times keep their file order).
///
/// Bodies are taken only as recorded: `content.text` as UTF-8, or decoded from base64 when
/// `content.encoding` is `"base64"` (a valid capture of binary content; such entries are named in the
/// report). A body that was not captured is ``RecordedExchange/Body/missing(_:)``, never guessed.
/// Pure value; thread-safe.
public struct HTTPArchive: Sendable {
    public var creator: String
    public var exchanges: [RecordedExchange]

    /// Parses `data` (the bytes of a `.har` file). Throws ``HTTPArchiveError`` with a message that
    /// says what is wrong: not JSON, truncated JSON, JSON that is not a HAR, or an entry lacking a
    /// required member (named by its position).
    public static func parse(_ data: [UInt8]) throws(HTTPArchiveError) -> HTTPArchive {
        let json: Any
        do {
            json = try JSONSerialization.jsonObject(with: Data(data), options: [.fragmentsAllowed])
        } catch {
            if let truncation = JSONTruncation.describe(data) { throw .truncated(truncation) }
            throw .notJSON(data.isEmpty ? "the file is empty" : "\(error.localizedDescription)")
        }
        guard let root = json as? [String: Any] else { throw .notHAR("the top level is not a JSON object") }
        guard let log = root["log"] as? [String: Any] else { throw .notHAR("no \"log\" object at the top level") }
        guard let entries = log["entries"] as? [Any] else { throw .notHAR("no \"log.entries\" array") }
        var creator = "unknown"
        if let c = log["creator"] as? [String: Any] {
            creator = [c["name"] as? String, c["version"] as? String].compactMap { $0 }.joined(separator: " ")
        }
        var exchanges: [RecordedExchange] = []
        for (index, value) in entries.enumerated() {
            guard let entry = value as? [String: Any] else { throw .invalidEntry(index, "not a JSON object") }
            exchanges.append(try RecordedExchange(harEntry: entry, index: index))
        }
        exchanges = exchanges.enumerated().sorted { a, b in
            a.element.started != b.element.started ? a.element.started < b.element.started : a.offset < b.offset
        }.map(\.element)
        return HTTPArchive(creator: creator, exchanges: exchanges)
    }
}

/// Why a file could not be read as a HAR. `description` is the message the command line prints.
public enum HTTPArchiveError: Error, Equatable, Sendable, CustomStringConvertible {
    case notJSON(String)
    case truncated(String)
    case notHAR(String)
    case invalidEntry(Int, String)

    public var description: String {
        switch self {
        case .notJSON(let why): "not a HAR file: not JSON (\(why))"
        case .truncated(let why): "truncated HAR file: \(why)"
        case .notHAR(let why): "not a HAR file: \(why) (HAR 1.2 expected: {\"log\": {\"entries\": [...]}})"
        case .invalidEntry(let i, let why): "invalid HAR entry \(i + 1) (log.entries[\(i)]): \(why)"
        }
    }
}

/// Recognises JSON that breaks off: an unterminated string, or objects/arrays left open at the end.
enum JSONTruncation {
    /// A description of where `data` breaks off, or nil when it does not look truncated.
    static func describe(_ data: [UInt8]) -> String? {
        guard let first = data.first(where: { !(($0 == 0x20) || ($0 == 0x0A) || ($0 == 0x0D) || ($0 == 0x09)) }),
              first == UInt8(ascii: "{") || first == UInt8(ascii: "[") else { return nil }
        var depth = 0, inString = false, escaped = false
        for byte in data {
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
            default: break
            }
            if depth < 0 { return nil }
        }
        if inString { return "the JSON ends inside a string after \(data.count) bytes" }
        if depth > 0 { return "the JSON ends after \(data.count) bytes with \(depth) object(s) or array(s) still open" }
        return nil
    }
}
