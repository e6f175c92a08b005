"""`dcserve estimate` on a HAR recorded by mitmproxy (a reverse proxy in front of the example API) while a
script drives the three seed cases: a news feed, two users' calendars, a chat. The estimate's bytes with
dictionary transport must be within 5% of what the release server sends when the same sequence is
replayed through it (a replay upstream serving the recorded bodies, a Python dictionary client), with
the same per-rule hit ratio. Bad files get a clear message and exit 1; a missing body is named and not
replayed, a base64 body is decoded and named. The HTML report is opened in headless Chromium (plot and
tables in the DOM; screenshot in .build/artifacts/estimate-report.png)."""
from __future__ import annotations

import base64
import json
import pathlib

import pytest

from chromium import Chromium
from conftest import ROOT, run
from dcserve_server import DCServe
from har_support import HarReplayUpstream, Mitmdump, ReplayClient, drive_seed_session, load_har, target
from upstream_support import ExampleAPI

RULE_FLAGS = ["--dictionaries", "/latest_news", "--dictionaries", "/api/calendar",
              "--history-dictionaries", "/api/chats/:chat/*", "--partition-header", "Authorization",
              "--dictionary-lifetime", "max-age=0, stale-while-revalidate=86400"]
ARTIFACT = ROOT / ".build/artifacts/estimate-report.png"


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> pathlib.Path:
    """The seed session as mitmproxy recorded it."""
    har = tmp_path_factory.mktemp("har") / "seed.har"
    with ExampleAPI() as api:
        proxy = Mitmdump(api.base, har)
        try:
            sent = drive_seed_session(proxy.base)
        finally:
            proxy.stop()
    assert har.exists(), proxy.logs()
    entries = load_har(har)
    assert len(entries) == sent
    assert json.loads(har.read_text())["log"]["creator"]["name"] == "mitmproxy"
    return har


def estimate(dcserve_bin, har, *extra, check=True):
    return run(dcserve_bin, "estimate", str(har), *RULE_FLAGS, *extra, check=check, timeout=300)


def test_estimate_matches_the_release_server_replaying_the_session(dcserve_bin, brotli_cli, recording, tmp_path):
    report = json.loads(estimate(dcserve_bin, recording, "--json").stdout)
    entries = load_har(recording)
    assert report["replayed"] == len(entries) and report["skipped"] == [] and report["base64Bodies"] == []
    rules = {r["name"]: r["totals"] for r in report["rules"]}
    assert set(rules) == {"quick1", "quick2", "history1", "(none)"}, rules.keys()
    # Each live rule: one first visit per client, then deltas (the example API's feeds change a little).
    assert rules["quick1"]["hits"] == 6 and rules["quick1"]["misses"] == {"first-visit": 1}, rules["quick1"]
    assert rules["quick2"]["hits"] == 12 and rules["quick2"]["misses"] == {"first-visit": 2}, rules["quick2"]
    assert rules["history1"]["hits"] >= 6 and rules["history1"]["linkFetches"] >= 2, rules["history1"]
    # The updates (POSTs): 6 news, 12 calendar; the 6 chat posts fall under the history rule's path.
    assert rules["(none)"]["hits"] == 0 and rules["(none)"]["requests"] in (18, 24), rules["(none)"]
    assert set(rules["(none)"]["misses"]) <= {"method", "no-rule"}, rules["(none)"]
    # The live rules save bytes against dcserve's own br; the totals include every head and Link fetch.
    for rule in ("quick1", "quick2"):
        assert rules[rule]["dictionaryBodyBytes"] < 0.5 * rules[rule]["plainBodyBytes"], rules[rule]
        assert rules[rule]["dictionaryBytes"] < rules[rule]["plainBytes"], rules[rule]
    assert report["totals"]["dictionaryBytes"] < report["totals"]["plainBytes"], report["totals"]
    # Per rule and per group the parts add up to the totals.
    for key in ("requests", "identityBytes", "plainBytes", "dictionaryBytes", "hits", "linkBytes"):
        assert sum(r[key] for r in rules.values()) == report["totals"][key], key
        assert sum(g["totals"][key] for g in report["groups"]) == report["totals"][key], key
    assert {g["name"] for g in report["groups"]} >= {"/latest_news", "/api/calendar", "/api/chats/:id/messages"}

    # The same sequence through the release server, from a replay upstream, with an independent client.
    upstream = HarReplayUpstream(entries)
    try:
        with DCServe(dcserve_bin, ["--upstream", upstream.base, "--store", str(tmp_path / "store"), *RULE_FLAGS]) as server:
            client = ReplayClient(server.base, brotli_cli)
            for e in entries:
                req = e["request"]
                headers = {h["name"]: h["value"] for h in req["headers"] if not h["name"].startswith(":")}
                body = req.get("postData", {}).get("text")
                client.get(req["method"], target(req["url"]), headers, None if body is None else body.encode(),
                           partition=headers.get("Authorization", headers.get("authorization", "")))
            client.close()
    finally:
        upstream.stop()
    released = client.total_bytes
    estimated = report["totals"]["dictionaryBytes"]
    print(f"with dictionary transport: estimate {estimated} B, release server {released} B")
    assert abs(estimated - released) <= 0.05 * released, (estimated, released)
    hits: dict[str, list[int]] = {}
    for decision in client.decisions:
        fields = dict(t.split("=", 1) if "=" in t else (t, "") for t in (decision or "").split())
        rule = fields.get("rule", "(none)")
        hits.setdefault(rule, [0, 0])
        hits[rule][0] += "delta" in fields
        hits[rule][1] += 1
    for rule, (h, n) in hits.items():
        assert (rules[rule]["hits"], rules[rule]["requests"]) == (h, n), (rule, rules[rule], h, n)


def test_html_report_in_headless_chromium(dcserve_bin, recording, tmp_path):
    page = tmp_path / "report.html"
    text = estimate(dcserve_bin, recording, "--html", str(page)).stdout.decode()
    assert "per rule:" in text and "quick1" in text
    html = page.read_text()
    assert "<script" not in html and "http://" not in html.replace("http://127.0.0.1", "")  # self-contained
    with Chromium() as browser:
        browser.navigate(page.as_uri())
        plots = browser.evaluate("Array.from(document.querySelectorAll('svg.group-plot')).map(s => [s.dataset.group, s.querySelectorAll('circle').length])")
        rows = browser.evaluate("Array.from(document.querySelectorAll('#rules tbody tr')).map(r => r.dataset.name)")
        shot = browser.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=True)
    groups = dict(plots)
    assert groups["/latest_news"] == 2 * 7 and groups["/api/calendar"] == 2 * 14, plots  # two series, a point per request
    assert rows == ["quick1", "quick2", "history1", "(none)"], rows
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    ARTIFACT.write_bytes(base64.b64decode(shot["data"]))
    assert ARTIFACT.stat().st_size > 1000


def test_missing_and_base64_bodies_are_named(dcserve_bin, recording, tmp_path):
    har = json.loads(recording.read_text())
    entries = har["log"]["entries"]
    gets = [i for i, e in enumerate(entries) if e["request"]["method"] == "GET"]
    missing, encoded = gets[3], gets[4]
    del entries[missing]["response"]["content"]["text"]
    content = entries[encoded]["response"]["content"]
    original = content["text"].encode()
    content["text"], content["encoding"] = base64.b64encode(original).decode(), "base64"
    edited = tmp_path / "edited.har"
    edited.write_text(json.dumps(har))
    report = json.loads(estimate(dcserve_bin, edited, "--json").stdout)
    assert [s["entry"] for s in report["skipped"]] == [missing]
    assert "body not captured" in report["skipped"][0]["reason"]
    assert [b["entry"] for b in report["base64Bodies"]] == [encoded]
    row = next(r for r in report["requests"] if r["entry"] == encoded)
    assert row["identityBytes"] == len(original)
    text = estimate(dcserve_bin, edited).stdout.decode()
    assert f"entry {missing + 1} GET" in text and "body not captured" in text
    assert "bodies recorded in base64, decoded and replayed (1)" in text


@pytest.mark.parametrize("name,contents,message", [
    ("truncated.har", None, "truncated HAR file: the JSON ends"),
    ("notes.har", b"these are my notes, not a recording\n", "not a HAR file: not JSON"),
    ("package.json", b'{"name": "app", "version": "1.0.0"}', 'not a HAR file: no "log" object'),
    ("entries.har", b'{"log": {"entries": [{"request": {}}]}}', "invalid HAR entry 1 (log.entries[0]): no startedDateTime"),
    ("empty.har", b"", "not a HAR file: not JSON (the file is empty)"),
])
def test_bad_files_get_a_clear_message(dcserve_bin, recording, tmp_path, name, contents, message):
    path = tmp_path / name
    path.write_bytes(recording.read_bytes()[: len(recording.read_bytes()) // 2] if contents is None else contents)
    result = estimate(dcserve_bin, path, check=False)
    assert result.returncode == 1, result
    err = result.stderr.decode()
    assert message in err and "Error:" in err and "Fatal" not in err, err


def test_missing_file_and_missing_rules(dcserve_bin, tmp_path):
    result = run(dcserve_bin, "estimate", str(tmp_path / "nope.har"), "--dictionaries", "/a", check=False)
    assert result.returncode == 1 and "no such file" in result.stderr.decode()
    result = run(dcserve_bin, "estimate", str(tmp_path / "nope.har"), check=False)
    assert result.returncode != 0 and "--dictionaries" in result.stderr.decode()
