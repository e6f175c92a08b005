@testable import DCServe
import DictionaryCodec
import DictionaryTransport

// Mode `history-path`: the request paths a history rule answers itself —
// `<group path>/.dcserve-dictionary/<hex>` and `/.well-known/dcserve-dictionary/<hex>`
// (HistoryDictionaryURL.parse) — and the conversation ("group") derived from a path under a rule's
// `match` (HistoryGroupPattern: the pattern itself is config input, the path is a request's).
//
// Input: `match` NUL `path`; without a NUL the whole input is the path and the match is
// `/api/chats/:chat/*`.
//
// Also DictionaryRuleSet.namesWhatItSays, whether rules may be matched on the path as sent.
//
// Invariants: a path that names what it says is its own routing normal form (RoutePath: no dot
// segment to remove, no unreserved character to decode); a parsed dictionary URL prints back to
// exactly the input path (no two paths name the same dictionary); a group value is a non-empty unreserved token of at most 128 bytes, the path
// starts with its group path, and the dictionary URL built for it parses back to the same hash and
// group path.

let historyDefaultPattern = try! HistoryGroupPattern("/api/chats/:chat/*")
let historyHash = DictionaryHash(bytes: Array(0..<32))!

func fuzzHistoryPath(_ bytes: [UInt8]) {
    let parts = fieldValues(bytes, max: 2)
    let path = parts.count > 1 ? parts[1] : parts[0]
    if path.hasPrefix("/"), DictionaryRuleSet.namesWhatItSays(Substring(path)) {
        precondition(RoutePath.normalized(Substring(path)) == path, "\(path) names what it says but normalizes to another path")
    }
    if let url = HistoryDictionaryURL.parse(Substring(path)) {
        let printed = url.groupPath.map { "\($0)/\(HistoryDictionaryURL.segment)/\(url.hash.hex)" }
            ?? HistoryDictionaryURL.wellKnownPrefix + url.hash.hex
        precondition(printed == path, "dictionary URL \(path) prints as \(printed)")
    }
    var group = historyDefaultPattern
    if parts.count > 1 {
        guard let configured = try? HistoryGroupPattern(parts[0]) else { return }
        group = configured
        precondition(!group.name.isEmpty && group.prefix.hasPrefix("/"))
    }
    guard let value = group.value(in: Substring(path)) else { return }
    precondition(!value.isEmpty && value.utf8.count <= HistoryGroupPattern.maximumValueLength
                 && value.utf8.allSatisfy(HistoryGroupPattern.isUnreserved), "group value \(value)")
    let groupPath = group.groupPath(value)
    precondition(path.hasPrefix(groupPath), "\(path) is not under its group path \(groupPath)")
    guard let pattern = try? URLPattern(group.prefix + "/" + value + group.rest, base: nil) else { return }
    let dictionaryPath = HistoryDictionaryURL.path(for: historyHash, groupPath: groupPath, pattern: pattern)
    guard let again = HistoryDictionaryURL.parse(Substring(dictionaryPath)) else {
        preconditionFailure("the dictionary URL \(dictionaryPath) does not parse")
    }
    precondition(again.hash == historyHash)
    precondition(again.groupPath.map(String.init) == (dictionaryPath == HistoryDictionaryURL.wellKnownPrefix + historyHash.hex ? nil : groupPath))
}
