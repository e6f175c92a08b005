import Foundation

/// The plain-text form of an ``EstimateReport`` (what `dcserve estimate` prints by default). Pure.
public enum EstimateTextReport {
    public static func render(_ r: EstimateReport) -> String {
        var out = "\(r.file): \(r.entries) entries (\(r.creator)), \(r.replayed) replayed from \(r.origin)\n"
        let t = r.totals
        out += "with dictionary transport: \(bytes(t.dictionaryBytes)) instead of \(bytes(t.plainBytes)) "
            + "(\(percent(t.savedVersusPlain)) saved vs what dcserve sends without dictionaries; identity bodies \(bytes(t.identityBytes)), "
            + "br-11 bodies \(bytes(t.br11Bytes))); \(t.hits) of \(t.requests) responses were deltas (\(percent(t.hitRatio)))\n"
        out += "\nper rule:\n" + table(r.rules, first: "rule")
        out += "\nper endpoint group:\n" + table(r.groups, first: "group")
        let misses = t.misses.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        if !misses.isEmpty {
            out += "\nmisses: " + misses.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + "\n"
        }
        if !r.skipped.isEmpty {
            out += "\nnot replayed (\(r.skipped.count)):\n"
            for e in r.skipped { out += "  entry \(e.entry + 1) \(e.method) \(e.url): \(e.reason)\n" }
        }
        if !r.base64Bodies.isEmpty {
            out += "\nbodies recorded in base64, decoded and replayed (\(r.base64Bodies.count)):\n"
            for e in r.base64Bodies { out += "  entry \(e.entry + 1) \(e.method) \(e.url)\n" }
        }
        let errors = r.requests.filter { $0.error != nil }
        if !errors.isEmpty {
            out += "\nerrors (\(errors.count)):\n"
            for e in errors { out += "  entry \(e.entry + 1) \(e.method) \(e.path): \(e.error!)\n" }
        }
        out += "\n" + r.notes.map { "note: \($0)" }.joined(separator: "\n") + "\n"
        return out
    }

    static func table(_ rows: [EstimateReport.Row], first: String) -> String {
        let header = [first, "requests", "identity", "plain", "br-11", "dictionary", "saved", "hits", "links", "misses"]
        var lines = [header]
        for row in rows {
            let t = row.totals
            let codings = t.plainCodings.sorted { $0.value > $1.value }.map(\.key).prefix(2).joined(separator: "/")
            let misses = t.misses.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
                .map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            lines.append([row.name, "\(t.requests)", bytes(t.identityBytes), "\(bytes(t.plainBytes)) \(codings)", bytes(t.br11Bytes),
                          bytes(t.dictionaryBytes), percent(t.savedVersusPlain), "\(t.hits) (\(percent(t.hitRatio)))",
                          t.linkFetches == 0 ? "-" : "\(t.linkFetches), \(bytes(t.linkBytes))", misses.isEmpty ? "-" : misses])
        }
        var widths = [Int](repeating: 0, count: header.count)
        for line in lines { for (i, cell) in line.enumerated() { widths[i] = max(widths[i], cell.count) } }
        return lines.map { line in
            "  " + line.enumerated().map { i, cell in
                i == line.count - 1 ? cell : cell.padding(toLength: widths[i], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n") + "\n"
    }

    static func bytes(_ n: Int) -> String {
        if n < 10_000 { return "\(n) B" }
        if n < 10_000_000 { return String(format: "%.1f KB", Double(n) / 1000) }
        return String(format: "%.1f MB", Double(n) / 1_000_000)
    }

    static func percent(_ x: Double) -> String { String(format: "%.1f%%", x * 100) }
}
