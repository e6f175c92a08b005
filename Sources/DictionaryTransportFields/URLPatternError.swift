/// Why a `match` pattern was refused. Carries the pattern and a message fit for a start-up error
/// ("dictionary rule 'app': match ...: <message>").
public struct URLPatternError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Hashable, Sendable {
        case empty
        case tooLong
        /// `( … )` regexp groups: clients ignore such dictionaries (RFC 9842 §2.1.1).
        case regexpGroup
        /// An absolute pattern for another scheme, host or port than the dictionary's.
        case crossOrigin
        /// A pattern in the scheme/host/port, user info, or a search (`?…`) or hash (`#…`) part:
        /// dcserve matches paths only.
        case unsupportedComponent
        /// A relative pattern that needs the dictionary's URL, but none was given.
        case needsBaseURL
        case invalidURL
        /// A `\` at the end of the pattern.
        case danglingEscape
        /// `:` not followed by a name.
        case missingName
        case duplicateName
        /// `{` without `}`, `}` without `{`, or `{` inside a group.
        case unbalancedGroup
        /// A modifier (`?`, `+`, `*`) where none may stand.
        case misplacedModifier
        /// A valid pattern that can never match what the server means it to: characters a request
        /// path or `Use-As-Dictionary` cannot carry, a literal `\`, a query after a `?` modifier
        /// (``URLPattern/validateServed(_:)``).
        case neverMatches
    }

    public let kind: Kind
    public let pattern: String
    /// UTF-8 offset in the pathname pattern where the problem was found, when known.
    public let offset: Int?
    public let message: String

    public init(_ kind: Kind, pattern: String, offset: Int? = nil, _ message: String) {
        self.kind = kind
        self.pattern = pattern
        self.offset = offset
        self.message = message
    }

    public var description: String {
        "match pattern \(pattern.debugDescription): \(message)" + (offset.map { " (at offset \($0))" } ?? "")
    }
}
