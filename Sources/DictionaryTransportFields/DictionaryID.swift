import HTTPTypes
import RawStructuredFieldValues

/// A dictionary identifier (RFC 9842 §2.1.3 `id`, echoed by clients in the `Dictionary-ID` request
/// field §2.3): an sf-string of at most 1024 printable ASCII characters (0x20–0x7E).
///
/// Opaque to clients; dcserve never trusts it instead of the hash. A value type, thread-safe.
public struct DictionaryID: Hashable, Sendable, CustomStringConvertible {
    /// The identifier text (unquoted).
    public let value: String

    /// Longest identifier RFC 9842 allows.
    public static let maximumLength = 1024

    /// Validates `value`: 0...1024 characters, each 0x20–0x7E. Returns nil otherwise.
    public init?(_ value: String) {
        guard value.utf8.count <= Self.maximumLength,
              value.utf8.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E }) else { return nil }
        self.value = value
    }

    /// The sf-string serialisation (quoted, `"` and `\` escaped), the whole `Dictionary-ID` value.
    public var fieldValue: String {
        var serializer = StructuredFieldValueSerializer()
        let bytes = try! serializer.writeItemFieldValue(StructuredFieldItems.item(.string(value)))
        return String(decoding: bytes, as: UTF8.self)
    }

    public var description: String { value }

    /// Why a present `Dictionary-ID` field was not usable.
    public enum Rejection: String, Sendable, Hashable {
        case repeated, oversized, malformed, notString
    }

    /// The outcome of reading `Dictionary-ID` from a request.
    public enum Parsed: Hashable, Sendable {
        case absent
        case present(DictionaryID)
        case rejected(Rejection)

        public var value: DictionaryID? {
            if case .present(let v) = self { return v }
            return nil
        }
    }

    /// Reads `Dictionary-ID` from request fields; repeated lines or a list fail closed.
    public static func parse(_ fields: HTTPFields) -> Parsed {
        switch SingleFieldValue(.dictionaryID, in: fields) {
        case .absent: return .absent
        case .repeated: return .rejected(.repeated)
        case .one(let value): return parse(fieldValue: value)
        }
    }

    /// Parses one field value: an sf-string item (parameters ignored).
    public static func parse(fieldValue: String) -> Parsed {
        let bytes = Array(fieldValue.utf8)
        // Quoted form of a 1024-character id with every character escaped, plus slack.
        guard bytes.count <= 2 * maximumLength + 16 else { return .rejected(.oversized) }
        var parser = StructuredFieldValueParser(bytes)
        guard let item = try? parser.parseItemFieldValue() else {
            if (try? { var p = StructuredFieldValueParser(bytes); return try p.parseListFieldValue() }())?.count ?? 0 > 1 {
                return .rejected(.repeated)
            }
            return .rejected(.malformed)
        }
        guard case .string(let text) = item.rfc9651BareItem else { return .rejected(.notString) }
        guard let id = DictionaryID(text) else { return .rejected(.oversized) }
        return .present(id)
    }
}
