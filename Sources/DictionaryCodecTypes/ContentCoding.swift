/// The HTTP content codings dcserve produces and understands, by their registered tokens.
///
/// `dcb` and `dcz` are the RFC 9842 dictionary codings (they need a dictionary); the others are the
/// ordinary ones used when no dictionary applies.
public enum ContentCoding: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case dcb
    case dcz
    case br
    case zstd
    case gzip
    case identity

    /// Parses a coding token case-insensitively (`Accept-Encoding` tokens are case-insensitive).
    public init?(token: some StringProtocol) {
        self.init(rawValue: token.lowercased())
    }

    /// True for the dictionary codings dcb and dcz.
    public var usesDictionary: Bool { self == .dcb || self == .dcz }

    public var description: String { rawValue }
}
