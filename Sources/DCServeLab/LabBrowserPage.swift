/// `/lab/`: the page a browser runs the whole suite from. Self-contained HTML + JS (no external
/// assets, no build step). It fetches `/lab/plan.json` (or `?run=ID`'s plan), runs each step the way a
/// page would — `fetch()` for destination "", a `<script>` element for "script", a hidden `<iframe>`
/// for a `page` step (so the browser sees its `Link` header) — reports the SHA-256 of what fetch()
/// decoded (`crypto.subtle`), then shows the graded table. `runLab()` returns a promise of the results
/// JSON (the Chromium test calls it); `?autorun=1` starts it on load. Immutable; thread-safe.
enum LabBrowserPage {
    static let html = #"""
<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>dcserve lab</title>
<style>
body{font:14px system-ui,sans-serif;margin:2em;max-width:80em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}
tr.passed .status{background:#c8f7c5}tr.failed .status{background:#f7c5c5}tr.not-run .status{background:#eee}
#log{font:12px monospace;white-space:pre-wrap;max-height:20em;overflow:auto;background:#f6f6f6;padding:.5em}
</style></head>
<body>
<h1>dcserve lab: is this browser a conforming RFC 9842 client?</h1>
<p>Runs every scenario of <a href="/lab/plan.json">the plan</a> with fetch(), script loads and a hidden frame,
then grades what the browser actually sent. Dictionaries need a secure context: open this page over HTTPS or
on localhost.</p>
<p><button id="run">Run the suite</button> <span id="state">idle</span></p>
<table id="results"></table>
<p id="links"></p>
<div id="log"></div>
<script>
"use strict";
const logEl = document.getElementById("log");
const stateEl = document.getElementById("state");
function log(line) { logEl.textContent += line + "\n"; logEl.scrollTop = logEl.scrollHeight; }
const sleep = ms => new Promise(r => setTimeout(r, ms));
async function sha256hex(buffer) {
  const digest = await crypto.subtle.digest("SHA-256", buffer);
  return Array.from(new Uint8Array(digest), b => b.toString(16).padStart(2, "0")).join("");
}
function loadScript(url) {
  return new Promise(resolve => {
    const s = document.createElement("script");
    s.src = url; s.onload = () => resolve(true); s.onerror = () => resolve(false);
    document.head.appendChild(s);
  });
}
function loadFrame(url) {
  return new Promise(resolve => {
    const f = document.createElement("iframe");
    f.style.display = "none"; f.onload = () => resolve(true); f.src = url;
    document.body.appendChild(f);
  });
}
async function get(step, url) {
  if (step.destination === "script") return loadScript(url);
  const response = await fetch(url, {cache: "no-store"});
  return response.arrayBuffer();
}
async function runStep(plan, step) {
  switch (step.kind) {
  case "wait":
    log(`wait ${step.seconds} s`);
    await sleep(step.seconds * 1000);
    return;
  case "page":
    await loadFrame(step.url);
    return;
  case "probe":
    for (let i = 0; i < step.maxTries; i++) {
      try { await get(step, step.url + (step.url.includes("?") ? "&" : "?") + "try=" + i); } catch (e) { /* graded by the lab */ }
      const ready = await (await fetch(step.readyURL, {cache: "no-store"})).json();
      if (ready.ready) return;
      await sleep(step.intervalMilliseconds);
    }
    log(`${step.id}: not ready after ${step.maxTries} tries`);
    return;
  case "fetch":
    if (!step.report) {
      try { await get(step, step.url); } catch (e) { log(`${step.id}: ${e}`); }
      return;
    }
    let report;
    try {
      const response = await fetch(step.url, {cache: "no-store"});
      report = {sha256: await sha256hex(await response.arrayBuffer())};
    } catch (e) {
      report = {error: String(e)};
    }
    log(`${step.id}: ${JSON.stringify(report)}`);
    await fetch(plan.reportURL.replace("{step}", step.id),
                {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(report)});
    return;
  default:
    log(`${step.id}: unknown step kind ${step.kind}`);
  }
}
function cell(row, text, cls) {
  const td = row.insertCell(); td.textContent = text; if (cls) td.className = cls; return td;
}
function show(results, plan) {
  const table = document.getElementById("results");
  table.innerHTML = "<tr><th>scenario</th><th>title</th><th>RFC</th><th>result</th><th>details</th></tr>";
  for (const s of results.scenarios) {
    const row = table.insertRow();
    row.className = s.status.replace(" ", "-");
    row.dataset.scenario = s.id;
    cell(row, s.id); cell(row, s.title); cell(row, s.rfc); cell(row, s.status, "status");
    cell(row, s.failures.join("\n")).style.whiteSpace = "pre-wrap";
  }
  const links = document.getElementById("links");
  links.innerHTML = "";
  const a = document.createElement("a"); a.href = plan.reportPageURL; a.textContent = "report page";
  const j = document.createElement("a"); j.href = plan.resultsURL; j.textContent = "results.json";
  links.append("Run " + results.run + ": ", a, " · ", j);
  stateEl.textContent = `${results.passed} passed, ${results.failed} failed, ${results.notRun} not run`;
}
async function runLab(run) {
  const params = new URLSearchParams(location.search);
  run = run || params.get("run");
  const plan = await (await fetch("/lab/plan.json" + (run ? "?run=" + encodeURIComponent(run) : ""), {cache: "no-store"})).json();
  stateEl.textContent = "running run " + plan.run;
  log(`run ${plan.run}: ${plan.steps.length} steps`);
  for (const step of plan.steps) {
    stateEl.textContent = `running ${step.id}`;
    await runStep(plan, step);
  }
  const results = await (await fetch(plan.resultsURL, {cache: "no-store"})).json();
  show(results, plan);
  window.labResults = results;
  return results;
}
document.getElementById("run").onclick = () => runLab().catch(e => { stateEl.textContent = "error: " + e; });
if (new URLSearchParams(location.search).get("autorun") === "1") runLab().catch(e => { stateEl.textContent = "error: " + e; });
</script>
</body></html>
"""#
}
