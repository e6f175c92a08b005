"""Headless Chromium and `dcserve fetch`, side by side against the same `dcserve serve`, make the same
RFC 9842 decisions: which dictionary goes into Available-Dictionary (or none), whether Dictionary-ID is
sent, and whether dcb/dcz are offered in Accept-Encoding. (Chromium's Accept-Encoding also lists
deflate; only the dictionary codings are compared.)"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time

import pytest

from chromium import CHROMIUM, Chromium
from dcserve_server import DCServe

if not os.access(CHROMIUM, os.X_OK):
    pytest.fail(f"{CHROMIUM} is missing: `make test` installs Debian's chromium", pytrace=False)

V1 = b"".join(b"export function part%d() { return 'component %d of the bundle'; }\n" % (i, i) for i in range(300))
V2 = V1.replace(b"component 17", b"component seventeen") + b"export const added = true;\n"
LIB1 = V1.replace(b"bundle", b"library")
LIB2 = V2.replace(b"bundle", b"library")

LOAD_SCRIPT = """
new Promise(resolve => { const s = document.createElement('script');
  s.src = %s; s.onload = () => resolve(true); s.onerror = () => resolve(false);
  document.head.appendChild(s); })
"""
FETCH = "fetch(%s, {cache: 'no-store'}).then(r => r.arrayBuffer()).then(b => b.byteLength)"


def decision(headers: dict[str, str]) -> dict:
    h = {k.lower(): v for k, v in headers.items()}
    codings = {t.strip().split(";")[0] for t in h.get("accept-encoding", "").split(",")}
    return {"available-dictionary": h.get("available-dictionary"), "dictionary-id": h.get("dictionary-id"),
            "dictionary-codings": sorted(codings & {"dcb", "dcz"})}


@pytest.fixture
def config(tmp_path):
    root = tmp_path / "site"
    for d in ("static", "dest"):
        (root / d).mkdir(parents=True)
    (root / "index.html").write_text("<!doctype html><title>side by side</title>")
    (root / "static/app.v1.js").write_bytes(V1)
    (root / "static/app.v2.js").write_bytes(V2)
    (root / "static/other.js").write_bytes(V2)
    (root / "dest/lib.v1.js").write_bytes(LIB1)
    (root / "dest/lib.v2.js").write_bytes(LIB2)
    cfg = {"site": {"root": str(root)}, "store": {"path": str(tmp_path / "store")},
           "compression": {"precompress": False}, "server": {"accessLog": False},
           "dictionaries": {"rules": ["bundle", "dest"],
                            "bundle": {"match": "/static/app.*.js", "maxAge": 3600},
                            "dest": {"match": "/dest/lib.*.js", "matchDest": ["script"], "maxAge": 3600}}}
    path = tmp_path / "dcserve.json"
    path.write_text(json.dumps(cfg))
    return path


def chromium_sent(browser: Chromium, url: str, script: bool = False) -> dict:
    browser.evaluate((LOAD_SCRIPT if script else FETCH) % json.dumps(url))
    browser.pump(0.1)
    sent = browser.sent_headers(url)
    assert sent, f"Chromium sent no request for {url}"
    return sent[-1]


def wait_until_registered(browser: Chromium, probe: str, script: bool) -> None:
    """Chromium stores dictionaries asynchronously: probe a matching path (bounded) until it attaches one."""
    for i in range(60):
        if "available-dictionary" in chromium_sent(browser, f"{probe}?try={i}", script):
            return
        time.sleep(0.25)
    raise AssertionError(f"Chromium never attached a dictionary for {probe}")


def fetch_sent(dcserve_bin, store, url: str, dest: str = "") -> dict:
    out = subprocess.run([dcserve_bin, "fetch", "--json", "--store", str(store), "--dest", dest, url],
                         capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout)["main"]["requestFields"])


def test_same_dictionary_decisions_as_chromium(dcserve_bin, config, tmp_path):
    store = tmp_path / "fetch-store"
    with DCServe(dcserve_bin, ["--config", str(config)]) as server, Chromium() as browser:
        base = f"http://localhost:{server.port}"
        browser.navigate(base + "/index.html")
        # Both clients register the two dictionaries from the same responses.
        assert browser.evaluate(FETCH % json.dumps("/static/app.v1.js")) == len(V1)
        assert browser.evaluate(LOAD_SCRIPT % json.dumps("/dest/lib.v1.js")) is True
        wait_until_registered(browser, "/static/app.probe.js", script=False)
        wait_until_registered(browser, "/dest/lib.probe.js", script=True)
        fetch_sent(dcserve_bin, store, base + "/static/app.v1.js")
        fetch_sent(dcserve_bin, store, base + "/dest/lib.v1.js", dest="script")

        cases = [
            ("/static/app.v2.js", False, ""),        # matches the bundle dictionary
            ("/static/other.js", False, ""),         # matches nothing
            ("/dest/lib.v2.js", True, "script"),     # match-dest=("script") and a script load
            ("/dest/lib.v2.js?fetch", False, ""),    # the same dictionary is not for fetch()
        ]
        results = []
        for path, script, dest in cases:
            chrome = decision(chromium_sent(browser, path, script))
            ours = decision(fetch_sent(dcserve_bin, store, base + path, dest))
            results.append((path, chrome, ours))
            assert chrome == ours, (path, chrome, ours)
        # The comparison is not vacuous: dictionaries were named where they should be.
        assert results[0][1]["available-dictionary"] == ":" + __import__("base64").b64encode(hashlib.sha256(V1).digest()).decode() + ":"
        assert results[0][1]["dictionary-codings"] == ["dcb", "dcz"]
        assert results[1][1]["available-dictionary"] is None and results[1][1]["dictionary-codings"] == []
        assert results[2][1]["available-dictionary"] is not None
        assert results[3][1]["available-dictionary"] is None
