import Foundation

/// The `--html` form of an ``EstimateReport``: one self-contained page (inline CSS and SVG, no
/// script, no external asset) with the totals, a plot per endpoint group of the bytes of each request
/// over time (without and with dictionary transport), the per-rule and per-group tables and the
/// entries not replayed. Element ids for scripts and tests: `#summary`, `#plots` (one
/// `svg.group-plot` per group, `data-group` naming it), `#rules`, `#groups`, `#skipped`. Pure.
public enum EstimateHTMLReport {
    public static func render(_ r: EstimateReport) -> String {
        let t = r.totals
        var html = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8">
            <title>dcserve estimate: \(escape(r.file))</title>
            <style>
            body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
            table{border-collapse:collapse;margin:8px 0 24px}th,td{border-bottom:1px solid #ddd;padding:4px 10px;text-align:right}
            th:first-child,td:first-child{text-align:left}th{background:#f4f4f4}
            .plot{display:inline-block;margin:0 16px 16px 0;vertical-align:top}.plot h3{font-size:13px;margin:4px 0}
            .plain{stroke:#999;fill:#999}.dict{stroke:#1769c2;fill:#1769c2}polyline.plain,polyline.dict{fill:none}
            .axis{stroke:#444}.legend{font-size:12px}
            code{background:#f4f4f4;padding:0 3px}
            </style></head><body>
            <h1>dcserve estimate</h1>
            <p id="summary"><code>\(escape(r.file))</code>: \(r.entries) entries (\(escape(r.creator))), \(r.replayed) replayed from \
            <code>\(escape(r.origin))</code>. With dictionary transport: <b>\(EstimateTextReport.bytes(t.dictionaryBytes))</b> \
            instead of \(EstimateTextReport.bytes(t.plainBytes)) (<b>\(EstimateTextReport.percent(t.savedVersusPlain)) saved</b> \
            against what dcserve sends without dictionaries); \(t.hits) of \(t.requests) responses were deltas \
            (\(EstimateTextReport.percent(t.hitRatio))). Identity bodies \(EstimateTextReport.bytes(t.identityBytes)), \
            br-11 bodies \(EstimateTextReport.bytes(t.br11Bytes)).</p>
            <h2>Bytes per request over time</h2>
            <p class="legend"><svg width="12" height="12"><rect class="plain" width="12" height="12"/></svg> without dictionaries \
            <svg width="12" height="12"><rect class="dict" width="12" height="12"/></svg> with dictionary transport \
            (heads, bodies and Link dictionary fetches)</p>
            <div id="plots">

            """
        for group in r.groups {
            html += plot(group: group.name, rows: r.requests.filter { $0.group == group.name })
        }
        html += "</div>\n<h2>Per rule</h2>\n" + table(r.rules, id: "rules", first: "rule")
        html += "<h2>Per endpoint group</h2>\n" + table(r.groups, id: "groups", first: "group")
        if !r.skipped.isEmpty || !r.base64Bodies.isEmpty {
            html += "<h2>Entries named</h2>\n<ul id=\"skipped\">\n"
            for e in r.skipped { html += "<li>entry \(e.entry + 1) \(escape(e.method)) <code>\(escape(e.url))</code>: not replayed, \(escape(e.reason))</li>\n" }
            for e in r.base64Bodies { html += "<li>entry \(e.entry + 1) \(escape(e.method)) <code>\(escape(e.url))</code>: \(escape(e.reason))</li>\n" }
            html += "</ul>\n"
        }
        html += "<h2>Notes</h2>\n<ul>\n" + r.notes.map { "<li>\(escape($0))</li>\n" }.joined() + "</ul>\n</body></html>\n"
        return html
    }

    static func plot(group: String, rows: [EstimateReport.RequestRow]) -> String {
        let width = 480.0, height = 180.0, left = 56.0, bottom = 24.0, top = 8.0, right = 8.0
        let maxTime = max(rows.map(\.time).max() ?? 0, 0.001)
        let maxBytes = max(Double(rows.map { max($0.plainBytes, $0.dictionaryBytes) }.max() ?? 0), 1)
        func x(_ t: Double) -> Double { left + (width - left - right) * t / maxTime }
        func y(_ b: Int) -> Double { height - bottom - (height - bottom - top) * Double(b) / maxBytes }
        func series(_ value: (EstimateReport.RequestRow) -> Int, _ cls: String) -> String {
            let points = rows.map { String(format: "%.1f,%.1f", x($0.time), y(value($0))) }
            var s = "<polyline class=\"\(cls)\" fill=\"none\" stroke-width=\"1.5\" points=\"\(points.joined(separator: " "))\"/>"
            for (row, point) in zip(rows, points) {
                let xy = point.split(separator: ",")
                s += "<circle class=\"\(cls)\" cx=\"\(xy[0])\" cy=\"\(xy[1])\" r=\"2.5\"><title>entry \(row.entry + 1) \(escape(row.path)): \(value(row)) B</title></circle>"
            }
            return s
        }
        return """
            <div class="plot"><h3>\(escape(group)) (\(rows.count) requests)</h3>
            <svg class="group-plot" data-group="\(escape(group))" width="\(Int(width))" height="\(Int(height))" \
            viewBox="0 0 \(Int(width)) \(Int(height))" role="img" aria-label="bytes per request over time for \(escape(group))">
            <line class="axis" x1="\(left)" y1="\(height - bottom)" x2="\(width - right)" y2="\(height - bottom)"/>
            <line class="axis" x1="\(left)" y1="\(top)" x2="\(left)" y2="\(height - bottom)"/>
            <text x="\(left - 4)" y="\(top + 10)" text-anchor="end" font-size="10">\(EstimateTextReport.bytes(Int(maxBytes)))</text>
            <text x="\(left - 4)" y="\(height - bottom)" text-anchor="end" font-size="10">0</text>
            <text x="\(width - right)" y="\(height - 6)" text-anchor="end" font-size="10">\(String(format: "%.1f", maxTime)) s</text>
            <text x="\(left)" y="\(height - 6)" font-size="10">0 s</text>
            \(series({ $0.plainBytes }, "plain"))
            \(series({ $0.dictionaryBytes }, "dict"))
            </svg></div>

            """
    }

    static func table(_ rows: [EstimateReport.Row], id: String, first: String) -> String {
        var html = "<table id=\"\(id)\"><thead><tr><th>\(first)</th><th>requests</th><th>identity</th><th>plain (dcserve)</th>"
            + "<th>br-11</th><th>with dictionaries</th><th>saved</th><th>hit ratio</th><th>Link fetches</th><th>misses</th></tr></thead><tbody>\n"
        for row in rows {
            let t = row.totals
            let codings = t.plainCodings.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            let misses = t.misses.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
                .map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            html += "<tr data-name=\"\(escape(row.name))\"><td>\(escape(row.name))</td><td>\(t.requests)</td>"
                + "<td>\(t.identityBytes)</td><td>\(t.plainBytes) <small>(\(escape(codings)))</small></td><td>\(t.br11Bytes)</td>"
                + "<td>\(t.dictionaryBytes)</td><td>\(EstimateTextReport.percent(t.savedVersusPlain))</td>"
                + "<td>\(EstimateTextReport.percent(t.hitRatio))</td><td>\(t.linkFetches)</td><td>\(escape(misses.isEmpty ? "-" : misses))</td></tr>\n"
        }
        return html + "</tbody></table>\n"
    }

    static func escape(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.count)
        for c in s {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(c)
            }
        }
        return out
    }
}
