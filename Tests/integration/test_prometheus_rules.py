"""The Prometheus recipes: `promtool check rules` accepts deploy/prometheus/dcserve-rules.yml, and
Debian's `prometheus`, scraping a running dcserve (an experiment on, deltas served to the dictionary
group), returns data for every PromQL expression the README and the rules file give (the recorded
series included, which the alerts are built on); the alert expressions evaluate without error."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import pytest

from conftest import ROOT, run
from dcserve_server import DCServe
from har_support import free_port

RULES = ROOT / "deploy/prometheus/dcserve-rules.yml"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"


def readme_promql() -> list[str]:
    """Every expression in the README's ```promql blocks (comment lines dropped)."""
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```promql\n(.*?)```", text, re.S)
    assert blocks, "README has no promql block"
    return [line for b in blocks for line in b.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def rule_entries() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(record, expr) and (alert, expr) pairs of the rules file, read with a minimal YAML reader
    (the file's own shapes: `- record:`/`- alert:` followed by `expr:` inline or as a `|` block)."""
    records, alerts = [], []
    lines = RULES.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"\s*- (record|alert): (\S+)", lines[i])
        if m:
            kind, name = m.groups()
            j = i + 1
            while not lines[j].strip().startswith("expr:"):
                j += 1
            expr = lines[j].split("expr:", 1)[1].strip()
            if expr == "|":
                indent = len(lines[j + 1]) - len(lines[j + 1].lstrip())
                body = []
                j += 1
                while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) >= indent):
                    body.append(lines[j].strip())
                    j += 1
                expr = " ".join(x for x in body if x)
            (records if kind == "record" else alerts).append((name, expr))
            i = j
        else:
            i += 1
    return records, alerts


def test_promtool_accepts_the_rules():
    result = run(PROMTOOL, "check", "rules", str(RULES), check=False)
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()
    assert b"SUCCESS" in result.stdout


def query(base: str, expr: str) -> dict:
    url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def traffic(server: DCServe, v1: bytes, clients: range) -> None:
    """Each client fetches the v1 bundle, then v2 naming v1 (a delta for the dictionary group)."""
    available = ":" + base64.b64encode(hashlib.sha256(v1).digest()).decode() + ":"
    for i in clients:
        ident = {"X-Client-Id": f"client-{i}", "Sec-Fetch-Dest": "script"}
        server.get("/static/app.v1.js", {**ident, "Accept-Encoding": "gzip, br, zstd"})
        server.get("/static/app.v2.js", {**ident, "Accept-Encoding": "gzip, br, zstd, dcb, dcz", "Available-Dictionary": available})


def test_every_expression_returns_data_from_a_running_dcserve(dcserve_bin, tmp_path):
    config = {
        "site": {"root": str(ROOT / "examples/site")},
        "store": {"path": str(tmp_path / "store")},
        "compression": {"precompress": False},
        "dictionaries": {"rules": ["bundle"], "bundle": {"match": "/static/app.*.js", "matchDest": ["script"]}},
        "experiment": {"controlShare": 0.5, "key": {"header": "X-Client-Id"}},
    }
    (tmp_path / "dcserve.json").write_text(json.dumps(config))
    rules = tmp_path / "rules.yml"
    rules.write_text(RULES.read_text().replace("interval: 30s", "interval: 1s"))  # evaluate at the test's pace
    v1 = (ROOT / "examples/site/static/app.v1.js").read_bytes()
    with DCServe(dcserve_bin, ["--config", str(tmp_path / "dcserve.json")]) as server:
        traffic(server, v1, range(0, 20))
        prom_port = free_port()
        (tmp_path / "prometheus.yml").write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            f"rule_files: ['{rules}']\n"
            "scrape_configs:\n"
            f"  - job_name: dcserve\n    static_configs: [{{targets: ['127.0.0.1:{server.admin_port}']}}]\n")
        log = open(tmp_path / "prometheus.log", "wb")
        prom = subprocess.Popen([PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}",
                                 f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{prom_port}"],
                                stdout=log, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{prom_port}"
        try:
            deadline = time.monotonic() + 60
            scrapes = 0
            round_ = 1
            # Two scrapes at least, with new traffic between them (rates need an increase).
            while time.monotonic() < deadline:
                try:
                    r = query(base, 'count_over_time(up{job="dcserve"}[5m])')
                    scrapes = int(float(r["data"]["result"][0]["value"][1])) if r["data"]["result"] else 0
                except OSError:
                    scrapes = 0
                if scrapes >= 3:
                    break
                traffic(server, v1, range(20 * round_, 20 * round_ + 20))
                round_ += 1
                time.sleep(0.5)
            assert scrapes >= 3, (tmp_path / "prometheus.log").read_text()[-3000:]
            records, alerts = rule_entries()
            assert [a for a, _ in alerts] == ["DCServeHitRatioFell", "DCServeStoreDegraded"]
            expressions = readme_promql() + [e for _, e in records] + [name for name, _ in records]
            missing = []
            deadline = time.monotonic() + 30
            for expr in expressions:
                while True:
                    r = query(base, expr)
                    assert r["status"] == "success", (expr, r)
                    if r["data"]["result"] or time.monotonic() > deadline:
                        break
                    time.sleep(0.5)  # a recorded series appears at the group's next evaluation
                if not r["data"]["result"]:
                    missing.append(expr)
            assert not missing, missing
            ratio = query(base, 'dcserve:hit_ratio:rate5m{rule="bundle"}')["data"]["result"]
            assert 0 < float(ratio[0]["value"][1]) < 1, ratio  # deltas for the dictionary group only
            groups = {s["metric"]["group"] for s in query(base, "dcserve:experiment_bytes_per_response:rate5m")["data"]["result"]}
            assert groups == {"control", "dictionary"}, groups
            for name, expr in alerts:
                assert query(base, expr)["status"] == "success", name
        finally:
            prom.terminate()
            try:
                prom.wait(timeout=20)
            except subprocess.TimeoutExpired:
                prom.kill()
