import HTTPTypes
import RawStructuredFieldValues

/// The `Use-As-Dictionary` response field (RFC 9842 §2.1): marks a response as a dictionary and says
/// which future requests may use it.
///
/// A value type, thread-safe. Serialised and parsed with swift-http-structured-headers (an sf-dictionary):
/// `match` (sf-string, required), `match-dest` (inner list of sf-strings, omitted when empty),
/// `id` (sf-string, omitted when nil), `type` (token; only `raw` exists and it is the default, so it is
/// written only when ``writesType`` is true). Unknown members are ignored when parsing.
public struct UseAsDictionary: Hashable, Sendable {
    /// The URL pattern (constructor string) the dictionary applies to, unresolved. Validate it with
    /// ``URLPattern`` before advertising.
    public var match: String
    /// Fetch destinations (`Sec-Fetch-Dest` values) the dictionary applies to; empty means all.
    public var matchDestinations: [String]
    /// Optional server identifier echoed by clients in `Dictionary-ID`.
    public var id: DictionaryID?
    /// Whether to write `type=raw` explicitly (it is the default either way).
    public var writesType: Bool

    /// Longest `Use-As-Dictionary` field value parsed; longer values are rejected.
    public static let maximumFieldLength = 8192

    public init(match: String, matchDestinations: [String] = [], id: DictionaryID? = nil, writesType: Bool = false) {
        self.match = match
        self.matchDestinations = matchDestinations
        self.id = id
        self.writesType = writesType
    }

    /// Why a value cannot be serialised or a field cannot be used.
    public enum Problem: Error, Hashable, Sendable, CustomStringConvertible {
        case missingMatch
        case matchNotString
        case matchNotSerialisable(String)
        case matchDestNotInnerListOfStrings
        case idNotValid
        case unsupportedType(String)
        case repeated
        case oversized
        case malformed

        public var description: String {
            switch self {
            case .missingMatch: "Use-As-Dictionary has no non-empty `match`"
            case .matchNotString: "Use-As-Dictionary `match` is not an sf-string"
            case .matchNotSerialisable(let m): "`match` \(m.debugDescription) contains characters an sf-string cannot carry (printable ASCII only)"
            case .matchDestNotInnerListOfStrings: "Use-As-Dictionary `match-dest` is not an inner list of sf-strings"
            case .idNotValid: "Use-As-Dictionary `id` is not an sf-string of at most 1024 printable ASCII characters"
            case .unsupportedType(let t): "Use-As-Dictionary `type` \(t) is not `raw`"
            case .repeated: "more than one Use-As-Dictionary field"
            case .oversized: "Use-As-Dictionary field longer than \(UseAsDictionary.maximumFieldLength) bytes"
            case .malformed: "Use-As-Dictionary is not a valid structured-field dictionary"
            }
        }
    }

    /// The field value, e.g. `match="/app/*/main.js", match-dest=("script"), id="v1"`.
    /// Throws ``Problem`` when `match` is empty or not printable ASCII, or a destination is not.
    public func fieldValue() throws(Problem) -> String {
        guard !match.isEmpty else { throw .missingMatch }
        func printable(_ s: String) -> Bool { s.utf8.allSatisfy { $0 >= 0x20 && $0 <= 0x7E } }
        guard printable(match) else { throw .matchNotSerialisable(match) }
        guard matchDestinations.allSatisfy(printable) else { throw .matchDestNotInnerListOfStrings }
        var members = OrderedMap<String, ItemOrInnerList>()
        members["match"] = .item(StructuredFieldItems.item(.string(match)))
        if !matchDestinations.isEmpty {
            let items = matchDestinations.map { StructuredFieldItems.item(.string($0)) }
            members["match-dest"] = .innerList(StructuredFieldItems.innerList(items))
        }
        if let id { members["id"] = .item(StructuredFieldItems.item(.string(id.value))) }
        if writesType { members["type"] = .item(StructuredFieldItems.item(.token("raw"))) }
        var serializer = StructuredFieldValueSerializer()
        guard let bytes = try? serializer.writeDictionaryFieldValue(members) else { throw .malformed }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Parses one `Use-As-Dictionary` field value. Unknown members are ignored; a `type` other than
    /// the token `raw` is refused (clients must not use unknown dictionary types).
    public init(fieldValue: String) throws(Problem) {
        let bytes = Array(fieldValue.utf8)
        guard bytes.count <= Self.maximumFieldLength else { throw .oversized }
        var parser = StructuredFieldValueParser(bytes)
        guard let members = try? parser.parseDictionaryFieldValue() else { throw .malformed }
        guard let matchMember = members["match"] else { throw .missingMatch }
        guard case .item(let matchItem) = matchMember, case .string(let match) = matchItem.rfc9651BareItem else {
            throw .matchNotString
        }
        guard !match.isEmpty else { throw .missingMatch }
        var destinations: [String] = []
        if let destMember = members["match-dest"] {
            guard case .innerList(let list) = destMember else { throw .matchDestNotInnerListOfStrings }
            for item in list.bareInnerList {
                guard case .string(let dest) = item.rfc9651BareItem else { throw .matchDestNotInnerListOfStrings }
                destinations.append(dest)
            }
        }
        var id: DictionaryID?
        if let idMember = members["id"] {
            guard case .item(let idItem) = idMember, case .string(let text) = idItem.rfc9651BareItem,
                  let parsed = DictionaryID(text) else { throw .idNotValid }
            id = parsed
        }
        var writesType = false
        if let typeMember = members["type"] {
            guard case .item(let typeItem) = typeMember, case .token(let token) = typeItem.rfc9651BareItem else {
                throw .unsupportedType("(not a token)")
            }
            guard token == "raw" else { throw .unsupportedType(token) }
            writesType = true
        }
        self.init(match: match, matchDestinations: destinations, id: id, writesType: writesType)
    }

    /// Reads `Use-As-Dictionary` from response fields; more than one field line is refused.
    public static func parse(_ fields: HTTPFields) throws(Problem) -> UseAsDictionary? {
        switch SingleFieldValue(.useAsDictionary, in: fields) {
        case .absent: return nil
        case .repeated: throw .repeated
        case .one(let value): return try UseAsDictionary(fieldValue: value)
        }
    }

    /// True when `destination` (a request's `Sec-Fetch-Dest`, nil when absent) is allowed by
    /// `match-dest`. An empty list allows every destination. A request without `Sec-Fetch-Dest`
    /// (a non-browser client, which applies no destination filter itself) is allowed. `match-dest`
    /// lists Fetch destinations, where `fetch()` and XHR have the empty destination `""`, which
    /// `Sec-Fetch-Dest` sends as `empty` (Fetch Metadata §2.1).
    public func allows(destination: String?) -> Bool {
        guard let destination, !matchDestinations.isEmpty else { return true }
        return matchDestinations.contains(destination == "empty" ? "" : destination)
    }
}
