import DictionaryCodec
import HTTPCore
import HTTPTypes

/// A parsed `Accept-Encoding` request field (RFC 9110 §12.5.3) with q-values.
///
/// Rules (documented choices where the RFC leaves room):
/// - All field lines are merged (a repeated field is the same as one comma-joined line).
/// - Tokens are case-insensitive. Unknown codings (`deflate`, `compress`, …) are kept but never chosen.
/// - A member whose weight is malformed (`q=2`, `q=0.1234`, `q=abc`) is ignored entirely. Other
///   parameters are ignored.
/// - A coding listed more than once takes its lowest weight (the most cautious reading).
/// - `*` gives its weight to every coding not listed, except the dictionary codings: `dcb`/`dcz` are
///   acceptable only when listed explicitly (RFC 9842 clients list them only when they attach a
///   dictionary).
/// - `identity` is acceptable unless excluded by `identity;q=0`, or by `*;q=0` without an `identity`
///   member. Not listed, it takes the weight of `*` when present, else it ranks below every listed
///   coding (as nginx and jshttp/negotiator read it): the lowest weight above 0 among the listed
///   members, so `br;q=0.9, gzip;q=0.8` gets br, and gzip when br cannot be made. A tie with the
///   lowest goes to the coding (server preference ranks identity last; see ``CodingChoice``, where
///   only a smaller known body beats preference). With nothing listed above 0 it weighs 1 (it is
///   then all the client accepts).
/// - No `Accept-Encoding` field at all: only `identity` (RFC 9110 allows anything; sending
///   compression to a client that did not ask is the riskier reading).
///
/// A value type, thread-safe. Weights are in thousandths (0…1000).
public struct AcceptEncoding: Hashable, Sendable {
    /// Explicit weights by lower-cased coding token.
    public private(set) var weights: [String: Int]
    /// Weight of `*`, when present.
    public private(set) var wildcardWeight: Int?
    /// True when the request had at least one `Accept-Encoding` field line.
    public let isPresent: Bool

    /// Bytes of field value considered; members beyond are ignored whole (bounded work on hostile input).
    public static let maximumFieldLength = 4096

    /// Parses every `Accept-Encoding` line in `fields`.
    public init(_ fields: HTTPFields) {
        let lines = fields[values: .acceptEncoding]
        self.init(fieldValues: lines, isPresent: !lines.isEmpty)
    }

    /// Parses one or more field values (for tests and non-HTTPFields callers).
    public init(fieldValue: String) { self.init(fieldValues: [fieldValue], isPresent: true) }

    init(fieldValues: [String], isPresent: Bool) {
        self.isPresent = isPresent
        weights = [:]
        wildcardWeight = nil
        var budget = Self.maximumFieldLength
        // Split at `,`, `;` and `=` bytes (RFC 9110 §5.6.1): a separator followed by a combining mark
        // is one Character to `String.split` but still a separator on the wire.
        for line in fieldValues {
            for member in line.fieldMembers(separatedBy: ",", trimmingOWS: false) {
                // Members past the length budget are ignored whole (never truncated into another meaning).
                budget -= member.utf8.count + 1
                guard budget >= 0 else { return }
                var pieces = member.fieldMembers(separatedBy: ";", omittingEmpty: false)
                let token = (pieces.next() ?? "").lowercased()
                guard !token.isEmpty, token.utf8.allSatisfy(Self.isTokenByte) else { continue }
                var weight = 1000
                var valid = true
                for parameter in pieces {
                    let (name, value) = parameter.fieldPair(separatedBy: "=", omittingEmpty: false)
                    guard let name, let value, name.lowercased() == "q" else { continue }
                    if let q = Self.parseQValue(value) { weight = q } else { valid = false }
                }
                guard valid else { continue }
                if token == "*" {
                    wildcardWeight = min(wildcardWeight ?? 1000, weight)
                } else {
                    weights[token] = min(weights[token] ?? 1000, weight)
                }
            }
        }
    }

    /// The weight (0…1000) this request gives `coding`; 0 means not acceptable.
    public func weight(of coding: ContentCoding) -> Int {
        if !isPresent { return coding == .identity ? 1000 : 0 }
        if let w = weights[coding.rawValue] { return w }
        if coding.usesDictionary { return 0 }
        if coding == .identity {
            // Unlisted identity: refused only by `*;q=0`; otherwise below every listed coding.
            if let w = wildcardWeight { return w }
            var lowest = 1000
            for w in weights.values where w > 0 && w < lowest { lowest = w }
            return lowest
        }
        return wildcardWeight ?? 0
    }

    /// True when the weight of `coding` is above zero.
    public func accepts(_ coding: ContentCoding) -> Bool { weight(of: coding) > 0 }

    /// True when any of `codings` has a weight above zero.
    public func acceptsAny(of codings: [ContentCoding]) -> Bool { codings.contains { accepts($0) } }

    /// qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ), in thousandths.
    static func parseQValue(_ text: Substring) -> Int? {
        let u = text.utf8
        guard let first = u.first, first == UInt8(ascii: "0") || first == UInt8(ascii: "1") else { return nil }
        var value = Int(first - UInt8(ascii: "0")) * 1000
        if u.count == 1 { return value }
        guard u.dropFirst().first == UInt8(ascii: "."), u.count <= 5 else { return nil }
        var scale = 100
        for d in u.dropFirst(2) {
            guard d >= UInt8(ascii: "0"), d <= UInt8(ascii: "9") else { return nil }
            value += Int(d - UInt8(ascii: "0")) * scale
            scale /= 10
        }
        return value <= 1000 ? value : nil
    }

    static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: "!#$%&'*+-.^_`|~".utf8.contains(b)
        }
    }
}
