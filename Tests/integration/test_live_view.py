"""The live view on the admin listener. After known traffic (a dictionary stored,
a dcz delta, plain responses), headless Chromium loads /dcserve, and the DOM shows that dictionary,
those decisions and sizes, and the saved-bytes plot; a screenshot goes to .build/artifacts/live-view.png."""
from __future__ import annotations

import base64
import json
import os
import re
import time

import pytest

from chromium import CHROMIUM, Chromium
from dcserve_server import DCServe
from decision_support import V1, V2, available, hash16, make_site, request

from paths import ROOT
ARTIFACT = ROOT / ".build/artifacts/live-view.png"


@pytest.fixture
def traffic(dcserve_bin, tmp_path):
    site = make_site(tmp_path / "site")
    with DCServe(dcserve_bin, ["--root", str(site), "--store", str(tmp_path / "store"),
                               "--dictionaries", "/static/app*"]) as server:
        assert request(server.port, "/static/app.v1.js")[0] == 200
        request(server.port, "/static/app.v2.js", {"Accept-Encoding": "br"})  # caches the br variant
        status, headers, delta = request(server.port, "/static/app.v2.js",
                                         {"Accept-Encoding": "dcz, br", "Available-Dictionary": available(V1)})
        assert status == 200 and headers["Content-Encoding"] == "dcz"
        assert request(server.port, "/missing.txt?token=secret")[0] == 404
        yield server, len(delta)


def test_live_json_lists_dictionaries_and_decisions(traffic):
    server, delta_size = traffic
    status, headers, body = server.get("/dcserve/live.json", admin=True)
    assert status == 200 and headers["Content-Type"] == "application/json"
    data = json.loads(body)
    # v1 and v2 both match the rule's resources: both are stored.
    assert sorted(d["hash"] for d in data["dictionaries"]) == sorted([hash16(V1), hash16(V2)])
    assert data["dictionaryCount"] == 2
    d = next(d for d in data["dictionaries"] if d["hash"] == hash16(V1))
    assert d["rule"] == "quick1" and d["match"] == "/static/app*" and d["size"] == len(V1) and d["hits"] == 1
    assert d.get("partition") is None and d["source"] == "/static/app.v1.js"
    requests = data["requests"]
    assert [(r["method"], r["path"], r["status"], r["decision"]) for r in requests] == [
        ("GET", "/missing.txt", 404, "plain"), ("GET", "/static/app.v2.js", 200, "delta"),
        ("GET", "/static/app.v2.js", 200, "plain"), ("GET", "/static/app.v1.js", 200, "plain")]
    assert requests[1]["sent"] == delta_size and requests[1]["identity"] == len(V2) and requests[1]["dictionary"] == hash16(V1)
    assert "secret" not in body.decode()
    assert data["totals"]["saved"] > 0 and sum(b["saved"] for b in data["buckets"]) == data["totals"]["saved"]
    # Per rule over the recent GETs: the 404 has no rule; saved is against the best plain coding (br).
    (rule,) = data["rules"]
    assert (rule["rule"], rule["responses"], rule["deltas"]) == ("quick1", 3, 1), rule
    assert rule["saved"] == rule["bestPlain"] - rule["sent"] > 0 and abs(rule["hitRatio"] - 1 / 3) < 1e-9, rule
    status, headers, page = server.get("/dcserve", admin=True)
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    # Self-contained: no external asset (the only URL is the SVG namespace name).
    assert not re.search(rb'(src|href)=|https?://(?!www\.w3\.org/2000/svg)', page)
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    assert server.get("/dcserve", method="POST", admin=True)[0] == 405


@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason="chromium missing")
def test_chromium_shows_the_live_view(traffic):
    server, delta_size = traffic
    with Chromium() as browser:
        browser.call("Emulation.setDeviceMetricsOverride", {"width": 1280, "height": 900, "deviceScaleFactor": 1,
                                                            "mobile": False}, session=True)
        browser.navigate(f"http://127.0.0.1:{server.admin_port}/dcserve")
        deadline = time.monotonic() + 20
        state = None
        while time.monotonic() < deadline:
            state = browser.evaluate("""(() => {
              const rows = sel => [...document.querySelectorAll(sel + ' tbody tr')].map(tr =>
                Object.fromEntries([...tr.children].map(td => [td.dataset.col, td.textContent])));
              return {updates: Number(document.body.dataset.updates || 0),
                      dictionaries: rows('#dictionaries'), requests: rows('#requests'),
                      saved: document.getElementById('total-saved').dataset.bytes,
                      bars: document.querySelectorAll('#plot rect.saved').length,
                      savedBars: [...document.querySelectorAll('#plot rect.saved')].filter(r => Number(r.dataset.bytes) > 0).length,
                      count: document.getElementById('dictionary-count').textContent,
                      rules: rows('#rules'), times: [...document.querySelectorAll('#plot text.axis-time')].length};
            })()""")
            if state["updates"] >= 2:
                break
            browser.pump(0.2)
        assert state and state["updates"] >= 2, state  # it refreshed itself (2 s polling)
        assert state["count"] == "2"
        assert sorted((d["hash"], d["rule"], d["match"], d["size"], d["hits"]) for d in state["dictionaries"]) == sorted([
            (hash16(V1), "quick1", "/static/app*", str(len(V1)), "1"), (hash16(V2), "quick1", "/static/app*", str(len(V2)), "0")])
        decisions = [(r["path"], r["status"], r["decision"], r["coding"], r["reason"]) for r in state["requests"]]
        assert ("/static/app.v2.js", "200", "delta", "dcz", "hit") in decisions, decisions
        # 404s (and POSTs, health probes) are hidden until "show all" is ticked.
        assert not any(path == "/missing.txt" for path, *_ in decisions), decisions
        shown = browser.evaluate("""(() => { const box = document.getElementById('show-all'); box.click();
          return [...document.querySelectorAll('#requests tbody tr')].map(tr => [tr.children[2].textContent, tr.children[3].textContent]); })()""")
        assert ["/missing.txt", "404"] in shown, shown
        # Per rule: hit ratio and bytes saved against the best plain coding (br here), not identity.
        rule = next(r for r in state["rules"] if r["rule"] == "quick1")
        assert (rule["responses"], rule["deltas"], rule["hit-ratio"]) == ("3", "1", "33.3%"), rule
        assert int(rule["saved"]) == int(rule["best-plain"]) - int(rule["sent"]) and int(rule["saved"]) > 0, rule
        assert state["times"] == 2
        assert ("/static/app.v2.js", "200", "plain", "br", "no-dictionary-offered") in decisions
        delta = next(r for r in state["requests"] if r["decision"] == "delta")
        assert delta["sent"] == str(delta_size) and delta["identity"] == str(len(V2)) and delta["dictionary"] == hash16(V1)
        assert int(state["saved"]) > 0 and state["bars"] == 60 and state["savedBars"] >= 1
        shot = browser.call("Page.captureScreenshot", {"format": "png"}, session=True)
        ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
        ARTIFACT.write_bytes(base64.b64decode(shot["data"]))
        assert ARTIFACT.stat().st_size > 1000
