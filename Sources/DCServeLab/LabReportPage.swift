/// The HTML report of one run (`/lab/runs/<run>/`): a table of scenarios with their grade, the unmet
/// expectations, and what the client sent. Self-contained (no external assets). Pure; thread-safe.
enum LabReportPage {
    static func html(_ results: LabResults) -> String {
        var rows = ""
        for s in results.scenarios {
            let detail = s.failures.isEmpty ? "" : "<ul>" + s.failures.map { "<li>\(escape($0))</li>" }.joined() + "</ul>"
            let observed = s.observed.isEmpty ? "" :
                "<details><summary>\(s.observed.count) request(s)</summary><pre>\(escape(s.observed.joined(separator: "\n")))</pre></details>"
            rows += """
                <tr class="\(s.status.replacingOccurrences(of: " ", with: "-"))"><td>\(escape(s.id))</td><td>\(escape(s.title))</td>\
                <td>\(escape(s.rfc))</td><td class="status">\(escape(s.status))</td><td>\(detail)\(observed)</td></tr>

                """
        }
        return """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><title>dcserve lab — run \(escape(results.run))</title>
            <style>body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}
            tr.passed .status{background:#c8f7c5}tr.failed .status{background:#f7c5c5}tr.not-run .status{background:#eee}pre{white-space:pre-wrap;max-width:80em}</style>
            </head><body><h1>dcserve lab — run <code>\(escape(results.run))</code></h1>
            <p id="summary">\(results.passed) passed, \(results.failed) failed, \(results.notRun) not run.\
            \(results.userAgent.map { " Client: <code>\(escape($0))</code>." } ?? "")</p>
            <p>JSON: <a href="results.json">results.json</a></p>
            <table id="results"><tr><th>scenario</th><th>title</th><th>RFC</th><th>result</th><th>details</th></tr>
            \(rows)</table></body></html>

            """
    }

    static func escape(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(c)
            }
        }
        return out
    }
}
