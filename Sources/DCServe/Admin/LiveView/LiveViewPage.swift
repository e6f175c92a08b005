/// The live view: one self-contained HTML page (inline CSS and JavaScript, no external assets, no
/// build step) served by the admin listener at `/dcserve` (and `/`). It polls `live.json` (relative:
/// `/dcserve/live.json`) every 2 s and renders per rule the hit ratio and the bytes saved against the
/// best plain coding, the stored dictionaries, the recent responses with their decision and sizes
/// (POSTs and other methods, 404s and health probes hidden unless "show all" is ticked), and the
/// bytes saved by dictionaries per 10 s as an inline SVG bar plot with a time axis.
/// Every value from the server is inserted with `textContent` (request paths are client-controlled).
enum LiveViewPage {
    static let html = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>dcserve live view</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
  :root { --fg:#1d232b; --muted:#5f6b7a; --line:#d8dee6; --delta:#1a7f37; --plain:#6e7781; --bad:#cf222e; --bg:#f6f8fa; }
  body { font: 13px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); margin: 0; background: #fff; }
  header { padding: 10px 16px; border-bottom: 1px solid var(--line); background: var(--bg); display: flex; gap: 24px; align-items: baseline; flex-wrap: wrap; }
  header h1 { font-size: 16px; margin: 0; }
  .stat b { font-size: 15px; }
  .muted { color: var(--muted); }
  main { padding: 8px 16px 24px; }
  h2 { font-size: 14px; margin: 18px 0 6px; }
  table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
  th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid var(--line); white-space: nowrap; }
  th { font-weight: 600; background: var(--bg); position: sticky; top: 0; }
  td.num, th.num { text-align: right; }
  td.path { max-width: 420px; overflow: hidden; text-overflow: ellipsis; }
  code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; }
  .delta { color: var(--delta); font-weight: 600; }
  .plain { color: var(--plain); }
  .not-acceptable { color: var(--bad); font-weight: 600; }
  #plot { border: 1px solid var(--line); background: var(--bg); }
  #plot rect.saved { fill: var(--delta); }
  #plot rect.sent { fill: #8c959f; }
  .scroll { max-height: 420px; overflow: auto; border: 1px solid var(--line); }
  #status.error { color: var(--bad); }
</style>
</head>
<body>
<header>
  <h1>dcserve live view</h1>
  <span class="stat">dictionaries <b id="dictionary-count">–</b></span>
  <span class="stat">responses seen <b id="requests-seen">–</b></span>
  <span class="stat">deltas (recent) <b id="delta-count">–</b></span>
  <span class="stat">saved (plotted window) <b id="total-saved">–</b></span>
  <span id="status" class="muted">loading…</span>
</header>
<main>
  <h2>Bytes saved by dictionaries per <span id="bucket-seconds">10</span> s <span class="muted">(green: best plain − sent; grey: sent)</span></h2>
  <svg id="plot" width="720" height="120" viewBox="0 0 720 120" role="img" aria-label="bytes saved per bucket"></svg>
  <h2>Per rule <span class="muted">(recent GET/HEAD responses; saved = best plain coding − sent, not identity − sent)</span></h2>
  <table id="rules">
    <thead><tr><th>rule</th><th class="num">responses</th><th class="num">deltas</th><th class="num">hit ratio</th><th class="num">best plain</th><th class="num">sent</th><th class="num">saved</th></tr></thead>
    <tbody></tbody>
  </table>
  <section id="experiment" hidden>
  <h2>Experiment groups <span class="muted">(last 1000 finished responses; time to last byte from request parsed to last byte queued)</span></h2>
  <table id="groups">
    <thead><tr><th>group</th><th class="num">responses</th><th class="num">sent</th><th class="num">identity</th><th class="num">sent / response</th><th class="num">p50 ms</th><th class="num">p95 ms</th></tr></thead>
    <tbody></tbody>
  </table>
  </section>
  <h2>Stored dictionaries</h2>
  <div class="scroll"><table id="dictionaries">
    <thead><tr><th>hash</th><th>rule</th><th>match</th><th>match-dest</th><th>id</th><th class="num">size</th><th class="num">age</th><th class="num">hits</th><th>source</th><th>partition</th></tr></thead>
    <tbody></tbody>
  </table></div>
  <h2>Recent responses <span class="muted">(newest first)</span>
    <label class="muted"><input type="checkbox" id="show-all"> also POSTs and other methods, 404s and health probes</label></h2>
  <div class="scroll"><table id="requests">
    <thead><tr><th>time</th><th>method</th><th>path</th><th class="num">status</th><th>decision</th><th>coding</th><th>reason</th><th>dictionary</th><th>rule</th><th class="num">identity</th><th class="num">best plain</th><th class="num">sent</th></tr></thead>
    <tbody></tbody>
  </table></div>
</main>
<script>
"use strict";
const fmtBytes = n => n == null ? "–" : n < 1024 ? n + " B" : n < 1048576 ? (n / 1024).toFixed(1) + " KiB" : (n / 1048576).toFixed(2) + " MiB";
const fmtAge = s => s < 60 ? s + " s" : s < 3600 ? Math.floor(s / 60) + " min" : s < 86400 ? Math.floor(s / 3600) + " h" : Math.floor(s / 86400) + " d";
function cell(tr, text, cls, col) {
  const td = document.createElement("td");
  td.textContent = text == null ? "–" : String(text);
  if (cls) td.className = cls;
  if (col) td.dataset.col = col;
  tr.appendChild(td);
  return td;
}
function renderDictionaries(list) {
  const body = document.querySelector("#dictionaries tbody");
  const rows = list.map(d => {
    const tr = document.createElement("tr");
    tr.dataset.hash = d.hash;
    cell(tr, d.hash, "", "hash").classList.add("mono");
    cell(tr, d.rule, "", "rule");
    cell(tr, d.match, "", "match");
    cell(tr, d.matchDest.length ? d.matchDest.join(", ") : "(all)", "", "match-dest");
    cell(tr, d.id, "", "id");
    cell(tr, d.size, "num", "size").title = fmtBytes(d.size);
    cell(tr, fmtAge(d.ageSeconds), "num", "age");
    cell(tr, d.hits, "num", "hits");
    cell(tr, d.source, "path", "source");
    cell(tr, d.partition == null ? "shared" : d.partition, "", "partition");
    return tr;
  });
  body.replaceChildren(...rows);
}
// Hidden unless "show all" is ticked: what no dictionary rule acts on and what crowds the list.
const routine = r => !(r.method === "GET" || r.method === "HEAD") || r.status === 404 || /^\/(healthz|readyz)$/.test(r.path);
function renderRules(list) {
  const body = document.querySelector("#rules tbody");
  body.replaceChildren(...list.map(u => {
    const tr = document.createElement("tr");
    tr.dataset.rule = u.rule;
    cell(tr, u.rule, "", "rule");
    cell(tr, u.responses, "num", "responses");
    cell(tr, u.deltas, "num", "deltas");
    cell(tr, (100 * u.hitRatio).toFixed(1) + "%", "num", "hit-ratio");
    cell(tr, u.bestPlain, "num", "best-plain");
    cell(tr, u.sent, "num", "sent");
    cell(tr, u.saved, "num", "saved").title = fmtBytes(u.saved);
    return tr;
  }));
}
function renderGroups(list) {
  document.getElementById("experiment").hidden = list.length === 0;
  document.querySelector("#groups tbody").replaceChildren(...list.map(g => {
    const tr = document.createElement("tr");
    tr.dataset.group = g.group;
    cell(tr, g.group, "", "group");
    cell(tr, g.responses, "num", "responses");
    cell(tr, g.sent, "num", "sent").title = fmtBytes(g.sent);
    cell(tr, g.identity, "num", "identity").title = fmtBytes(g.identity);
    cell(tr, Math.round(g.sent / g.responses), "num", "per-response");
    cell(tr, g.p50Milliseconds.toFixed(2), "num", "p50");
    cell(tr, g.p95Milliseconds.toFixed(2), "num", "p95");
    return tr;
  }));
}
function renderRequests(all) {
  const body = document.querySelector("#requests tbody");
  const list = document.getElementById("show-all").checked ? all : all.filter(r => !routine(r));
  const rows = list.map(r => {
    const tr = document.createElement("tr");
    tr.dataset.decision = r.decision;
    tr.title = r.field;
    cell(tr, new Date(r.time * 1000).toLocaleTimeString(), "", "time");
    cell(tr, r.method, "", "method");
    cell(tr, r.path, "path", "path");
    cell(tr, r.status, "num", "status");
    cell(tr, r.decision, r.decision, "decision");
    cell(tr, r.coding, "", "coding");
    cell(tr, r.reason, "", "reason");
    cell(tr, r.dictionary, "", "dictionary");
    cell(tr, r.rule, "", "rule");
    cell(tr, r.identity, "num", "identity");
    cell(tr, r.bestPlain, "num", "best-plain");
    cell(tr, r.sent, "num", "sent");
    return tr;
  });
  body.replaceChildren(...rows);
}
function renderPlot(buckets) {
  const svg = document.getElementById("plot");
  const ns = "http://www.w3.org/2000/svg";
  const w = 720, h = 120, pad = 14;
  const max = Math.max(1, ...buckets.map(b => Math.max(b.bestPlain, b.sent)));
  const bw = w / Math.max(1, buckets.length);
  const parts = [];
  buckets.forEach((b, i) => {
    const x = i * bw;
    const sentH = (h - pad) * b.sent / max, savedH = (h - pad) * b.saved / max;
    for (const [cls, height, y, value] of [["sent", sentH, h - sentH, b.sent], ["saved", savedH, h - sentH - savedH, b.saved]]) {
      const r = document.createElementNS(ns, "rect");
      r.setAttribute("class", cls);
      r.setAttribute("x", (x + 1).toFixed(1)); r.setAttribute("width", Math.max(1, bw - 2).toFixed(1));
      r.setAttribute("y", y.toFixed(1)); r.setAttribute("height", height.toFixed(1));
      r.dataset.start = b.start; r.dataset.bytes = value;
      const t = document.createElementNS(ns, "title");
      t.textContent = new Date(b.start * 1000).toLocaleTimeString() + " " + cls + " " + fmtBytes(value);
      r.appendChild(t);
      parts.push(r);
    }
  });
  const label = document.createElementNS(ns, "text");
  label.setAttribute("x", 4); label.setAttribute("y", 11); label.setAttribute("font-size", 10);
  label.textContent = "max " + fmtBytes(max);
  parts.push(label);
  // The time axis: the first and last bucket's start.
  if (buckets.length) {
    for (const [x, anchor, start] of [[2, "start", buckets[0].start], [w - 2, "end", buckets[buckets.length - 1].start]]) {
      const t = document.createElementNS(ns, "text");
      t.setAttribute("class", "axis-time");
      t.setAttribute("x", x); t.setAttribute("y", h - 2); t.setAttribute("font-size", 10); t.setAttribute("text-anchor", anchor);
      t.textContent = new Date(start * 1000).toLocaleTimeString();
      parts.push(t);
    }
  }
  svg.replaceChildren(...parts);
}
let lastRequests = [];
document.getElementById("show-all").addEventListener("change", () => renderRequests(lastRequests));
async function refresh() {
  const status = document.getElementById("status");
  try {
    const r = await fetch("/dcserve/live.json", { cache: "no-store" });
    if (!r.ok) throw new Error("HTTP " + r.status);
    const s = await r.json();
    document.getElementById("dictionary-count").textContent = s.dictionaryCount;
    document.getElementById("requests-seen").textContent = s.requestsSeen;
    document.getElementById("delta-count").textContent = s.totals.deltas;
    document.getElementById("total-saved").textContent = fmtBytes(s.totals.saved);
    document.getElementById("total-saved").dataset.bytes = s.totals.saved;
    document.getElementById("bucket-seconds").textContent = s.bucketSeconds;
    renderDictionaries(s.dictionaries);
    renderRules(s.rules);
    renderGroups(s.groups);
    renderRequests(s.requests);
    lastRequests = s.requests;
    renderPlot(s.buckets);
    status.className = "muted";
    status.textContent = "updated " + new Date(s.now * 1000).toLocaleTimeString();
    document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
  } catch (e) {
    status.className = "error";
    status.textContent = "cannot load live.json: " + e.message;
  }
}
refresh();
setInterval(refresh, 2000);
</script>
</body>
</html>
"""#
}
