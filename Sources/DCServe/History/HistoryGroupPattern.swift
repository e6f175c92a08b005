import DictionaryTransport

/// The conversation ("group") part of a history rule's `match`, e.g. `/api/chats/:chat/*`: fixed
/// text, then one `:name` that is a whole path segment, then anything URLPattern accepts. This is
/// the only URL-pattern capture dcserve needs, so it is done here by hand on the fixed prefix
/// instead of adding captures to ``URLPattern``'s automaton.
///
/// A value type, immutable, thread-safe.
struct HistoryGroupPattern: Sendable, Equatable {
    struct Invalid: Error, Equatable {
        let reason: String
    }

    /// The text before the group's `/` (e.g. `/api/chats`).
    let prefix: String
    /// The group's name (e.g. `chat`).
    let name: String
    /// The text after the group (e.g. `/*`), possibly empty.
    let rest: String

    /// Longest group value tracked; longer ones are not a conversation dcserve keeps history for.
    static let maximumValueLength = 128

    init(_ match: String) throws(Invalid) {
        let scalars = Array(match.unicodeScalars)
        guard let colon = scalars.firstIndex(of: ":") else {
            throw Invalid(reason: "needs a named group such as /api/chats/:chat/* (one dictionary per value)")
        }
        let before = String(String.UnicodeScalarView(scalars[..<colon]))
        guard before.hasPrefix("/"), before.hasSuffix("/"), before.count >= 2 else {
            throw Invalid(reason: "needs fixed path text ending in / before the :group (e.g. /api/chats/:chat/*)")
        }
        guard !before.unicodeScalars.contains(where: { "*:{}()?+\\".unicodeScalars.contains($0) }) else {
            throw Invalid(reason: "may have no wildcard or group before the :group (the conversation must be found from a fixed prefix)")
        }
        var end = colon + 1
        while end < scalars.count, Self.isNameScalar(scalars[end], first: end == colon + 1) { end += 1 }
        guard end > colon + 1 else { throw Invalid(reason: "has a ':' not followed by a group name") }
        guard end == scalars.count || scalars[end] == "/" else {
            throw Invalid(reason: "needs the :group to be a whole path segment (followed by / or the end, no modifier)")
        }
        prefix = String(before.dropLast())
        name = String(String.UnicodeScalarView(scalars[(colon + 1)..<end]))
        rest = String(String.UnicodeScalarView(scalars[end...]))
    }

    /// The pattern of a configured rule; throws `ConfigurationError` naming `key`.
    static func configured(_ match: String, key: String) throws(ConfigurationError) -> HistoryGroupPattern {
        do {
            return try HistoryGroupPattern(match)
        } catch {
            throw ConfigurationError(key: key, "a history rule's match \(error.reason)")
        }
    }

    static func isNameScalar(_ c: Unicode.Scalar, first: Bool) -> Bool {
        if c == "_" || c == "$" || (c.properties.isAlphabetic && c.isASCII) { return true }
        return !first && ("0"..."9").contains(c)
    }

    /// The group value of `path` (the segment after the prefix), or nil when the path is not under
    /// the prefix or the value is not a plain token (unreserved characters only: `A-Z a-z 0-9 - . _ ~`,
    /// at most ``maximumValueLength``). The caller checks that the whole rule pattern matches.
    func value(in path: Substring) -> Substring? {
        guard path.hasPrefix(prefix + "/") else { return nil }
        let start = path.index(path.startIndex, offsetBy: prefix.count + 1)
        let segment = path[start...].prefix { $0 != "/" }
        guard !segment.isEmpty, segment.count <= Self.maximumValueLength,
              segment.utf8.allSatisfy(Self.isUnreserved), segment != ".", segment != ".." else { return nil }
        return segment
    }

    static func isUnreserved(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"): true
        default: false
        }
    }

    /// The `match` of one group's dictionary: the rule's pattern with the group replaced by `value`
    /// (a plain token: no pattern syntax to escape), e.g. `/api/chats/42/*`.
    func scopedMatch(_ value: some StringProtocol) -> String { "\(prefix)/\(value)\(rest)" }

    /// The path of one group (`/api/chats/42`), under which its dictionary URL lives when in scope.
    func groupPath(_ value: some StringProtocol) -> String { "\(prefix)/\(value)" }
}
