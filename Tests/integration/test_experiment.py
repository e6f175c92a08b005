"""The A/B switch end to end, on the release binary: with `experiment.controlShare` 0.5 and a client-id
header, 2,000 simulated clients split within 3% of half; each keeps its group after a restart and on a
second instance with its own store; the control group never sees Use-As-Dictionary, Link or a dcb/dcz
body while the dictionary group gets deltas; every response names its group (also in the access log);
a client without an id is served as `dictionary` and counted apart; the experiment metrics per group add
up exactly to the responses counted."""
from __future__ import annotations

import base64
import hashlib
import http.client
import json
import re

import pytest

from chromium import Chromium
from conftest import ROOT
from dcserve_server import DCServe

CLIENTS = 2000
V1 = (ROOT / "examples/site/static/app.v1.js").read_bytes()
AVAILABLE = ":" + base64.b64encode(hashlib.sha256(V1).digest()).decode() + ":"


def config(tmp_path, store: str) -> str:
    path = tmp_path / f"{store}.json"
    path.write_text(json.dumps({
        "site": {"root": str(ROOT / "examples/site")},
        "store": {"path": str(tmp_path / store)},
        "server": {"accessLog": True},
        "compression": {"precompress": False},
        "dictionaries": {"rules": ["bundle"], "bundle": {"match": "/static/app.*.js", "matchDest": ["script"]}},
        "experiment": {"controlShare": 0.5, "key": {"header": "X-Client-Id"}},
    }))
    return str(path)


class Client:
    def __init__(self, server: DCServe):
        self.conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)

    def get(self, path: str, headers: dict) -> tuple[int, dict, bytes]:
        self.conn.request("GET", path, headers=headers)
        r = self.conn.getresponse()
        body = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, body

    def close(self):
        self.conn.close()


def groups_of(server: DCServe, clients: range, deltas: bool) -> tuple[dict[str, str], int]:
    """Each client's group (from DCServe-Group); with `deltas` each also asks for v2 naming v1 and the
    transport fields are checked per group. Returns the groups and the number of responses."""
    c = Client(server)
    groups, responses = {}, 0
    for i in clients:
        ident = {"X-Client-Id": f"client-{i}", "Sec-Fetch-Dest": "script"}
        status, first, _ = c.get("/static/app.v1.js", {**ident, "Accept-Encoding": "gzip, br, zstd"})
        assert status == 200
        group = first["dcserve-group"]
        groups[f"client-{i}"] = group
        responses += 1
        assert "X-Client-Id".lower() in first.get("vary", "").lower()
        # server.sharedCaches defaults to ignoreVary: a CDN must not give one group's response to the other.
        assert "private" in first.get("cache-control", ""), first
        if not deltas:
            continue
        status, second, body = c.get("/static/app.v2.js", {**ident, "Accept-Encoding": "gzip, br, zstd, dcb, dcz",
                                                             "Available-Dictionary": AVAILABLE})
        responses += 1
        assert status == 200 and second["dcserve-group"] == group
        coding = second.get("content-encoding", "identity")
        if group == "control":
            for fields in (first, second):
                assert "use-as-dictionary" not in fields and "link" not in fields, fields
            assert coding not in ("dcb", "dcz") and body[:4] not in (bytes.fromhex("ff444342"), bytes.fromhex("5e2a4d18"))
        else:
            assert group == "dictionary"
            assert "use-as-dictionary" in first and coding in ("dcb", "dcz"), (first, second)
    c.close()
    return groups, responses


def metric_sums(server: DCServe, name: str) -> dict[str, float]:
    _, _, body = server.get("/metrics", admin=True)
    sums: dict[str, float] = {}
    for line in body.decode().splitlines():
        m = re.match(name + r'\{(.*)\} (\S+)$', line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
            sums[labels.get("group", "")] = sums.get(labels.get("group", ""), 0) + float(m.group(2))
    return sums


def test_split_stable_across_restarts_and_instances(dcserve_bin, tmp_path):
    with DCServe(dcserve_bin, ["--config", config(tmp_path, "store-a")]) as a:
        groups, responses = groups_of(a, range(CLIENTS), deltas=True)
        control = sum(1 for g in groups.values() if g == "control")
        assert abs(control / CLIENTS - 0.5) <= 0.03, control
        # A client without an id: dictionary transport, counted apart.
        status, headers, _ = a.get("/static/app.v1.js", {"Sec-Fetch-Dest": "script", "Accept-Encoding": "br"})
        assert status == 200 and headers["DCServe-Group"] == "dictionary" and headers["Use-As-Dictionary"]
        by_group = metric_sums(a, "dcserve_experiment_responses_total")
        assert by_group.get("unkeyed") == 1
        assert by_group.get("control") == 2 * control and by_group.get("dictionary") == responses - 2 * control, by_group
        total = sum(metric_sums(a, "dcserve_http_requests_total").values())
        assert sum(by_group.values()) == total == responses + 1, (by_group, total)
        sent = metric_sums(a, "dcserve_experiment_sent_bytes_total")
        body_total = sum(metric_sums(a, "dcserve_http_response_body_bytes_total").values())
        assert sum(sent.values()) == body_total, (sent, body_total)
        ttlb = metric_sums(a, "dcserve_experiment_time_to_last_byte_seconds_count")
        assert sum(ttlb.values()) == total, ttlb
        # The live view: the groups side by side over their last 1000 finished responses.
        _, _, live = a.get("/dcserve/live.json", admin=True)
        groups_live = {g["group"]: g for g in json.loads(live)["groups"]}
        assert set(groups_live) <= {"control", "dictionary", "unkeyed"} and {"control", "dictionary"} <= set(groups_live)
        assert sum(g["responses"] for g in groups_live.values()) == 1000, groups_live
        for g in groups_live.values():
            assert 0 < g["p50Milliseconds"] <= g["p95Milliseconds"] and g["sent"] <= g["identity"], g
        # Deltas: the dictionary group's v2 responses are far smaller than control's br.
        assert groups_live["dictionary"]["sent"] / groups_live["dictionary"]["responses"] < \
            groups_live["control"]["sent"] / groups_live["control"]["responses"], groups_live
        with Chromium() as browser:
            browser.navigate(f"http://127.0.0.1:{a.admin_port}/dcserve")
            rows = []
            for _ in range(50):
                rows = browser.evaluate("[...document.querySelectorAll('#groups tbody tr')].map(tr => [tr.dataset.group, tr.children[1].textContent, tr.children[6].textContent])")
                if rows:
                    break
                browser.pump(0.2)
            assert not browser.evaluate("document.getElementById('experiment').hidden")
            assert {r[0] for r in rows} == set(groups_live) and all(float(r[2]) > 0 for r in rows), rows
        a.stop()
        log = a.logs()
        assert "group=control" in log and "group=dictionary" in log and "group=dictionary keyed=no" in log
    # The same clients after a restart (same store), and on a second instance with its own store.
    with DCServe(dcserve_bin, ["--config", config(tmp_path, "store-a")]) as restarted, \
         DCServe(dcserve_bin, ["--config", config(tmp_path, "store-b")]) as other:
        assert groups_of(restarted, range(CLIENTS), deltas=False)[0] == groups
        assert groups_of(other, range(CLIENTS), deltas=False)[0] == groups
