"""Live API responses as dictionaries, through the reverse proxy against the example API:
`/latest_news` (one shared feed, the last 4 versions usable) and `/api/calendar` (per user by bearer
token, partitioned by an HMAC of Authorization). Deltas are decoded with the zstd CLI and the brotli
CLI, never with dcserve's own code.
"""
from __future__ import annotations

import base64
import gzip
import hashlib
import http.client
import json
import os
import pathlib
import stat
import time
import urllib.request

import pytest

import store_records
from dcserve_server import DCServe
from decoders import dcb_with_brotli_cli, dcz_with_zstd_cli, decode_plain
from upstream_support import ExampleAPI

LIFETIME = "max-age=0, stale-while-revalidate=86400"


def live_config(tmp: pathlib.Path, upstream: str) -> str:
    config = {
        "server": {"host": "127.0.0.1", "port": 0},
        "store": {"path": str(tmp / "store")},
        "compression": {"precompress": False},
        "upstreams": {"names": ["api"], "api": {"servers": [upstream], "readTimeoutSeconds": 5}},
        "routes": {"names": ["api"], "api": {"prefix": "/", "upstream": "api"}},
        "dictionaries": {
            "rules": ["news", "calendar", "tagged"],
            "news": {"match": "/latest_news", "upstreamVersions": 4, "lifetime": LIFETIME, "ttl": 86400},
            "calendar": {"match": "/api/calendar", "upstreamVersions": 3, "lifetime": LIFETIME,
                         "partition": {"header": "Authorization"}},
            "tagged": {"match": "/api/calendar-tagged", "upstreamVersions": 2, "lifetime": "upstream",
                       "partition": {"upstreamHeader": "Dictionary-Partition"}},
        },
    }
    path = tmp / "live.json"
    path.write_text(json.dumps(config))
    return str(path)


def request(port: int, path: str, headers: dict[str, str] | None = None, method: str = "GET"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, headers=headers or {})
        r = conn.getresponse()
        return r.status, r.headers, r.read()
    finally:
        conn.close()


def direct(api: ExampleAPI, path: str, headers: dict[str, str] | None = None, method: str = "GET") -> bytes:
    req = urllib.request.Request(api.base + path, headers=headers or {}, method=method, data=b"" if method == "POST" else None)
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read()


def available(body: bytes) -> str:
    return ":" + base64.b64encode(hashlib.sha256(body).digest()).decode() + ":"


def fetch_identity(port: int, path: str, extra: dict[str, str] | None = None):
    status, headers, body = request(port, path, {"Accept-Encoding": "identity", **(extra or {})})
    assert status == 200 and headers.get("Content-Encoding") is None
    return headers, body


def fetch_delta(port: int, path: str, dictionary: bytes, coding: str, extra: dict[str, str] | None = None):
    return request(port, path, {"Accept-Encoding": f"{coding}, gzip", "Available-Dictionary": available(dictionary),
                                **(extra or {})})


@pytest.fixture(scope="module")
def api():
    with ExampleAPI() as a:
        yield a


@pytest.fixture(scope="module")
def live(dcserve_bin, api, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("live")
    config = live_config(tmp, api.base)
    server = DCServe(dcserve_bin, ["--config", config, "--event-loops", "2"])
    holder = {"server": server, "config": config, "tmp": tmp, "bin": dcserve_bin}
    yield holder
    holder["server"].stop()


def test_latest_news_deltas_against_the_last_versions(live, api, brotli_cli):
    port = live["server"].port
    versions = []
    for i in range(4):
        headers, body = fetch_identity(port, "/latest_news")
        assert body == direct(api, "/latest_news")
        assert headers["Cache-Control"] == LIFETIME, "the operator's lifetime replaces the upstream's no-cache"
        assert headers["Use-As-Dictionary"] == 'match="/latest_news", ttl=86400'
        versions.append(body)
        direct(api, "/latest_news/update", method="POST")
    today = direct(api, "/latest_news")
    assert today not in versions

    # The previous version: dcz (zstd CLI) and dcb (brotli CLI) decode to today's body.
    status, headers, body = fetch_delta(port, "/latest_news", versions[-1], "dcz")
    assert status == 200 and headers["Content-Encoding"] == "dcz", dict(headers)
    assert dcz_with_zstd_cli(body, versions[-1]) == today
    assert len(body) < len(today) // 10, f"delta {len(body)} bytes of {len(today)}"
    status, headers, body = fetch_delta(port, "/latest_news", versions[-1], "dcb")
    assert status == 200 and headers["Content-Encoding"] == "dcb", dict(headers)
    assert dcb_with_brotli_cli(body, versions[-1], brotli_cli) == today

    # Three versions back still works (4 kept: today's and the three before it).
    status, headers, body = fetch_delta(port, "/latest_news", versions[1], "dcz")
    assert headers["Content-Encoding"] == "dcz", dict(headers)
    assert dcz_with_zstd_cli(body, versions[1]) == today

    # Past the retention: a plain coding, exactly as for an unknown hash.
    status, headers, body = fetch_delta(port, "/latest_news", versions[0], "dcz")
    assert status == 200 and headers["Content-Encoding"] == "gzip", dict(headers)
    assert decode_plain(body, "gzip", brotli_cli) == today
    unknown = fetch_delta(port, "/latest_news", b"never served", "dcz")
    assert unknown[1]["Content-Encoding"] == "gzip"


def rule_bytes(server, rule: str) -> dict[str, float]:
    """dcserve_rule_bytes_total of `rule`, by kind (identity, best_plain, sent)."""
    _, _, metrics = server.get("/metrics", admin=True)
    out = {}
    for line in metrics.decode().splitlines():
        if line.startswith("dcserve_rule_bytes_total") and f'rule="{rule}"' in line:
            out[line.split('kind="')[1].split('"')[0]] = float(line.rsplit(" ", 1)[1])
    return out


def test_live_deltas_report_what_a_plain_coding_would_have_sent(live, api):
    """Every live delta counts in the "bytes saved" figures: its plain alternative (gzip here, the
    client's best plain coding, at its cheapest level) is measured for some responses and estimated
    from their ratio for the others (each live version is new: encoding every one costs more than the
    delta)."""
    port = live["server"].port
    before = rule_bytes(live["server"], "news")
    _, held = fetch_identity(port, "/latest_news")
    first = len(held)  # sent as identity: its best plain size is its own
    identity = sent = first
    plain = 0
    for _ in range(6):
        direct(api, "/latest_news/update", method="POST")
        status, headers, body = fetch_delta(port, "/latest_news", held, "dcz")
        assert status == 200 and headers["Content-Encoding"] == "dcz", dict(headers)
        held = direct(api, "/latest_news")
        identity, sent, plain = identity + len(held), sent + len(body), plain + len(gzip.compress(held, 1))
    # A measured response is reported when its encode is done (off the request path).
    after, deadline = rule_bytes(live["server"], "news"), time.monotonic() + 10
    while time.monotonic() < deadline:
        time.sleep(0.3)
        again = rule_bytes(live["server"], "news")
        if again == after:
            break
        after = again
    grew = {k: after.get(k, 0) - before.get(k, 0) for k in ("identity", "best_plain", "sent")}
    assert grew["identity"] == identity and grew["sent"] == sent, (grew, identity, sent)
    # About what gzip-1 makes of the six versions (each estimate is a ratio measured on a neighbour).
    assert 0.8 * plain <= grew["best_plain"] - first <= 1.25 * plain, (grew, first, plain)


def calendar(port: int, user: str, extra: dict[str, str] | None = None):
    return {"Authorization": f"Bearer {user}", **(extra or {})}


def test_calendar_deltas_per_user_and_never_across(live, api, brotli_cli):
    port = live["server"].port
    previous = {}
    for user in ["alice", "bob"]:
        headers, body = fetch_identity(port, "/api/calendar", calendar(port, user))
        assert "private" in headers["Cache-Control"], dict(headers)
        assert "Use-As-Dictionary" in headers
        assert body == direct(api, "/api/calendar", calendar(port, user))
        previous[user] = body
        direct(api, "/api/calendar/update", calendar(port, user), method="POST")
    for user in ["alice", "bob"]:
        today = direct(api, "/api/calendar", calendar(port, user))
        for coding, decode in [("dcz", lambda b, d: dcz_with_zstd_cli(b, d)),
                               ("dcb", lambda b, d: dcb_with_brotli_cli(b, d, brotli_cli))]:
            status, headers, body = fetch_delta(port, "/api/calendar", previous[user], coding, calendar(port, user))
            assert status == 200 and headers["Content-Encoding"] == coding, dict(headers)
            assert "private" in headers["Cache-Control"]
            assert decode(body, previous[user]) == today
    # Bob naming Alice's hash gets a plain coding: Alice's bytes never shape Bob's response.
    bob_today = direct(api, "/api/calendar", calendar(port, "bob"))
    status, headers, body = fetch_delta(port, "/api/calendar", previous["alice"], "dcz", calendar(port, "bob"))
    assert status == 200 and headers["Content-Encoding"] == "gzip", dict(headers)
    assert "private" in headers["Cache-Control"]
    assert decode_plain(body, "gzip", brotli_cli) == bob_today
    # A request without the header: the API answers 401, never coded against Alice's bytes.
    status, headers, body = fetch_delta(port, "/api/calendar", previous["alice"], "dcz")
    assert status == 401 and headers.get("Content-Encoding") != "dcz"
    # The metrics count the mismatches and the hits per rule.
    _, _, metrics = live["server"].get("/metrics", admin=True)
    lines = [l for l in metrics.decode().splitlines() if l.startswith("dcserve_live_events_total")]
    def count(rule: str, event: str) -> float:
        return sum(float(l.rsplit(" ", 1)[1]) for l in lines if f'rule="{rule}"' in l and f'event="{event}"' in l)
    assert count("calendar", "partitionMismatch") == 1, "\n".join(lines + [l for l in metrics.decode().splitlines() if "negotiations" in l])
    assert count("calendar", "dictionaryHit") == 4, lines
    assert count("calendar", "response") == 7, lines


def test_upstream_header_partition_is_removed_and_upstream_lifetime_refuses_no_cache(live, api):
    """The `tagged` rule takes the partition from the upstream's Dictionary-Partition field (removed
    before the client sees it); its lifetime is `upstream`, and the API says `private, no-cache`: no
    freshness is invented, so nothing is advertised."""
    port = live["server"].port
    headers, body = fetch_identity(port, "/api/calendar-tagged", {"Authorization": "Bearer erin"})
    assert "Dictionary-Partition" not in headers, dict(headers)
    assert "Use-As-Dictionary" not in headers, "upstream no-cache must not be advertised"
    assert "private" in headers["Cache-Control"] and "no-cache" in headers["Cache-Control"]
    status, headers, _ = fetch_delta(port, "/api/calendar-tagged", body, "dcz", {"Authorization": "Bearer erin"})
    assert headers.get("Content-Encoding") != "dcz" and "Dictionary-Partition" not in headers


def test_partition_secret_and_no_credential_on_disk(live):
    store = live["tmp"] / "store"
    secret = store / "partition-secret"
    assert secret.exists()
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    for path in store.iterdir():
        if path.is_file():
            data = path.read_bytes()
            assert b"alice" not in data and b"Bearer" not in data, f"credential in {path.name}"
    # Live versions are written in the background (never on the request path): wait for them (bounded).
    import time
    deadline = time.monotonic() + 10
    while True:
        records = store_records.records(store)
        partitions = {r.get("partition") for r in records if r.get("rule") == "calendar"}
        if len(partitions) >= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert len(partitions) == 2 and all(p and len(p) == 64 for p in partitions), partitions


def test_calendar_deltas_continue_after_a_restart(live, api):
    port = live["server"].port
    _, before = fetch_identity(port, "/api/calendar", calendar(port, "carol"))
    live["server"].stop()
    direct(api, "/api/calendar/update", calendar(port, "carol"), method="POST")
    live["server"] = DCServe(live["bin"], ["--config", live["config"], "--event-loops", "2"])
    port = live["server"].port
    today = direct(api, "/api/calendar", calendar(port, "carol"))
    status, headers, body = fetch_delta(port, "/api/calendar", before, "dcz", calendar(port, "carol"))
    assert status == 200 and headers["Content-Encoding"] == "dcz", dict(headers) | {"log": live["server"].logs()[-2000:]}
    assert dcz_with_zstd_cli(body, before) == today
    # Another user still cannot name carol's version after the restart.
    status, headers, _ = fetch_delta(port, "/api/calendar", before, "dcz", calendar(port, "dave"))
    assert headers["Content-Encoding"] != "dcz"


def test_live_configuration_errors_name_the_key(dcserve_bin, tmp_path):
    import subprocess
    for rule, key in [({"match": "/x", "lifetime": "no-cache"}, "dictionaries.r.lifetime"),
                      ({"match": "/x", "upstreamVersions": 0}, "dictionaries.r.upstreamVersions"),
                      ({"match": "/x", "partition": {"header": "A", "cookie": "b"}}, "dictionaries.r.partition"),
                      ({"match": "/x", "partition": {"query": "a"}}, "dictionaries.r.partition.query")]:
        path = tmp_path / "bad.json"
        path.write_text(json.dumps({"site": {"root": str(tmp_path)}, "dictionaries": {"rules": ["r"], "r": rule}}))
        r = subprocess.run([dcserve_bin, "serve", "--config", str(path), "--port", "0"], capture_output=True, timeout=30)
        assert r.returncode != 0
        assert key in (r.stdout + r.stderr).decode(), (r.stdout + r.stderr).decode()
