import DictionaryCodec
import DictionaryTransport

/// Where a history dictionary is served (content-addressed by its SHA-256):
/// - in its group's scope when the group's `match` covers it: `<group path>/.dcserve-dictionary/<hex>`
///   (e.g. `/api/chats/42/.dcserve-dictionary/<hex>`), so a client fetching the NEXT dictionary
///   names the current one in `Available-Dictionary` and gets it delta-coded (a few hundred bytes
///   instead of the whole dictionary);
/// - otherwise (a `match` such as `/api/chats/:chat` that covers one path only):
///   `/.well-known/dcserve-dictionary/<hex>`.
/// Paths of these forms under a history rule are answered by dcserve, never by the upstream.
enum HistoryDictionaryURL {
    static let segment = ".dcserve-dictionary"
    static let wellKnownPrefix = "/.well-known/dcserve-dictionary/"

    /// The URL path for `hash` of the group at `groupPath` whose dictionary matches `pattern`.
    static func path(for hash: DictionaryHash, groupPath: String, pattern: URLPattern) -> String {
        let inScope = "\(groupPath)/\(segment)/\(hash.hex)"
        return pattern.matches(path: inScope) ? inScope : wellKnownPrefix + hash.hex
    }

    /// The hash a dictionary URL path names and the group path it is under (nil for the well-known
    /// form); nil when `path` is not such a URL.
    static func parse(_ path: Substring) -> (hash: DictionaryHash, groupPath: Substring?)? {
        guard let slash = path.lastIndex(of: "/") else { return nil }
        let hex = path[path.index(after: slash)...]
        guard hex.count == 64, hex.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }),
              let hash = DictionaryHash(hex: String(hex)) else { return nil }
        let head = path[..<slash]
        if head + "/" == wellKnownPrefix { return (hash, nil) }
        guard head.hasSuffix("/" + segment) else { return nil }
        return (hash, head.dropLast(segment.count + 1))
    }
}
