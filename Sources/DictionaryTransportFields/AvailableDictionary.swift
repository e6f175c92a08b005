import DictionaryCodecTypes
import Foundation
import HTTPTypes
import RawStructuredFieldValues

/// The `Available-Dictionary` request field (RFC 9842 §2.2): the SHA-256 of the one dictionary the
/// client holds for this URL, as an sf-binary of exactly 32 bytes.
///
/// A value type. Parsing is pure and thread-safe. Anything but exactly one field line holding one
/// sf-binary item of 32 bytes yields no dictionary (``Parsed/rejected(_:)``), never an error.
public struct AvailableDictionary: Hashable, Sendable {
    /// The dictionary hash the client announced.
    public let hash: DictionaryHash

    /// Longest field value considered: a 32-byte sf-binary is 46 characters; anything far longer is
    /// rejected before parsing.
    public static let maximumFieldLength = 128

    public init(hash: DictionaryHash) { self.hash = hash }

    /// The field value to send, e.g. `:U5abz16WDg7b8KS93msLPpOB4Vbef1uRzoORYkJw9BY=:`.
    public var fieldValue: String { hash.structuredFieldBinary }

    /// Why a present field was not usable.
    public enum Rejection: String, Sendable, Hashable {
        /// More than one field line (or a list in one line): ambiguous, fail closed.
        case repeated
        /// Longer than ``AvailableDictionary/maximumFieldLength``.
        case oversized
        /// Not a valid structured-field item.
        case malformed
        /// A valid item that is not an sf-binary.
        case notBinary
        /// An sf-binary whose length is not 32 bytes.
        case wrongLength
    }

    /// The outcome of reading the field from a request.
    public enum Parsed: Hashable, Sendable {
        case absent
        case present(AvailableDictionary)
        case rejected(Rejection)

        /// The usable value, or nil when absent or rejected.
        public var value: AvailableDictionary? {
            if case .present(let v) = self { return v }
            return nil
        }
    }

    /// Reads `Available-Dictionary` from request fields (all field lines are considered).
    public static func parse(_ fields: HTTPFields) -> Parsed {
        switch SingleFieldValue(.availableDictionary, in: fields) {
        case .absent: return .absent
        case .repeated: return .rejected(.repeated)
        case .one(let value): return parse(fieldValue: value)
        }
    }

    /// Parses one field value.
    public static func parse(fieldValue: String) -> Parsed {
        let bytes = Array(fieldValue.utf8)
        guard bytes.count <= maximumFieldLength else { return .rejected(.oversized) }
        var parser = StructuredFieldValueParser(bytes)
        let item: Item
        do {
            item = try parser.parseItemFieldValue()
        } catch {
            // A list such as `:a:, :b:` fails here with trailing bytes: fail closed as "repeated".
            if (try? { var p = StructuredFieldValueParser(bytes); return try p.parseListFieldValue() }())?.count ?? 0 > 1 {
                return .rejected(.repeated)
            }
            return .rejected(.malformed)
        }
        guard case .undecodedByteSequence(let base64) = item.rfc9651BareItem else { return .rejected(.notBinary) }
        // RFC 9651 §4.2.7: parsers SHOULD NOT fail when "=" padding is missing (a SHA-256 is 43
        // characters unpadded, 44 padded).
        let padded = base64.utf8.count % 4 == 0 ? base64 : base64 + String(repeating: "=", count: 4 - base64.utf8.count % 4)
        guard let data = Data(base64Encoded: padded), let hash = DictionaryHash(bytes: data) else {
            return .rejected(.wrongLength)
        }
        return .present(AvailableDictionary(hash: hash))
    }
}
