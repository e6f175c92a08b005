/// `Link` field values with `rel="compression-dictionary"` (RFC 9842 §3, RFC 8288 syntax):
/// `<uri>; rel="compression-dictionary"`, several links separated by commas, `rel` possibly listing
/// several space-separated relation types, parameters in any order, quoted or token values.
///
/// Hand-written, bounded (at most `maximumLinks` links, values over `maximumFieldLength` bytes are
/// ignored), never throws: malformed links are skipped. Pure; thread-safe.
public enum CompressionDictionaryLink {
    public static let maximumFieldLength = 8192
    public static let maximumLinks = 16

    /// The URI references (unresolved) of every compression-dictionary link in `values`.
    public static func references(in values: [String]) -> [String] {
        var found: [String] = []
        for value in values where value.utf8.count <= maximumFieldLength {
            var scanner = Substring(value)
            while found.count < maximumLinks {
                scanner = scanner.drop { $0 == " " || $0 == "\t" || $0 == "," }
                guard scanner.first == "<", let close = scanner.firstIndex(of: ">") else { break }
                let uri = String(scanner[scanner.index(after: scanner.startIndex)..<close])
                scanner = scanner[scanner.index(after: close)...]
                var isDictionary = false
                // Parameters: `; name[=value]` until the next top-level comma.
                while true {
                    scanner = scanner.drop { $0 == " " || $0 == "\t" }
                    guard scanner.first == ";" else { break }
                    scanner = scanner.dropFirst().drop { $0 == " " || $0 == "\t" }
                    let name = scanner.prefix { $0 != "=" && $0 != ";" && $0 != "," && $0 != " " }
                    scanner = scanner.dropFirst(name.count).drop { $0 == " " || $0 == "\t" }
                    var parameter = ""
                    if scanner.first == "=" {
                        scanner = scanner.dropFirst().drop { $0 == " " || $0 == "\t" }
                        if scanner.first == "\"" {
                            scanner = scanner.dropFirst()
                            var escaped = false
                            while let c = scanner.first {
                                scanner = scanner.dropFirst()
                                if escaped { parameter.append(c); escaped = false }
                                else if c == "\\" { escaped = true }
                                else if c == "\"" { break }
                                else { parameter.append(c) }
                            }
                        } else {
                            let token = scanner.prefix { $0 != ";" && $0 != "," && $0 != " " }
                            parameter = String(token)
                            scanner = scanner.dropFirst(token.count)
                        }
                    }
                    if name.lowercased() == "rel",
                       parameter.lowercased().split(separator: " ").contains("compression-dictionary") {
                        isDictionary = true
                    }
                }
                if isDictionary, !uri.isEmpty, uri.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) { found.append(uri) }
                // Skip to the next link.
                guard let comma = scanner.firstIndex(of: ",") else { break }
                scanner = scanner[comma...]
            }
        }
        return found
    }
}
