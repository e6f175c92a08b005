"""Metrics (Prometheus text on the admin listener) after known traffic, with exact counter values;
health and readiness endpoints; health probes kept out of the access log."""
from __future__ import annotations

import base64
import gzip
import hashlib
import json
import pathlib
import re
import shutil
import time

import pytest

from dcserve_server import DCServe

from paths import ROOT
V1 = (ROOT / "examples/site/static/app.v1.js").read_bytes()
V2 = (ROOT / "examples/site/static/app.v2.js").read_bytes()
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$')


def available(data: bytes) -> str:
    return ":" + base64.b64encode(hashlib.sha256(data).digest()).decode() + ":"


def scrape(server: DCServe) -> dict[tuple[str, frozenset], float]:
    status, headers, body = server.get("/metrics", admin=True)
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    samples = {}
    for line in body.decode().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        m = SAMPLE.match(line)
        assert m, f"not Prometheus text format: {line!r}"
        labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        samples[(m.group(1), labels)] = float(m.group(3))
    return samples


def value(samples, name: str, **labels) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


@pytest.fixture
def config(tmp_path):
    root = tmp_path / "site"
    (root / "static").mkdir(parents=True)
    (root / "static/app.v1.js").write_bytes(V1)
    (root / "static/app.v2.js").write_bytes(V2)
    cfg = {"site": {"root": str(root)}, "store": {"path": str(tmp_path / "store")},
           "compression": {"precompress": False},
           "dictionaries": {"rules": ["bundle"], "bundle": {"match": "/static/app.*.js"}}}
    path = tmp_path / "dcserve.json"
    path.write_text(json.dumps(cfg))
    return path


def test_metrics_count_known_traffic_exactly(dcserve_bin, config):
    with DCServe(dcserve_bin, ["--config", str(config)]) as s:
        for _ in range(2):
            assert s.get("/static/app.v1.js", {"Accept-Encoding": "identity"})[2] == V1
        dcz_sizes = []
        for _ in range(3):
            status, h, body = s.get("/static/app.v2.js", {"Accept-Encoding": "dcz", "Available-Dictionary": available(V1)})
            assert h["Content-Encoding"] == "dcz"
            dcz_sizes.append(len(body))
        status, h, body = s.get("/static/app.v2.js", {"Accept-Encoding": "dcz", "Available-Dictionary": available(b"x")})
        assert "Content-Encoding" not in h and body == V2
        status, h, gz = s.get("/static/app.v2.js", {"Accept-Encoding": "gzip"})
        assert h["Content-Encoding"] == "gzip" and gzip.decompress(gz) == V2
        assert s.get("/missing.js")[0] == 404

        m = scrape(s)
        assert value(m, "dcserve_http_requests_total", status="200", coding="identity") == 3
        assert value(m, "dcserve_http_requests_total", status="200", coding="dcz") == 3
        assert value(m, "dcserve_http_requests_total", status="200", coding="gzip") == 1
        assert value(m, "dcserve_http_requests_total", status="404", coding="identity") == 1
        assert value(m, "dcserve_http_response_body_bytes_total", coding="dcz") == sum(dcz_sizes)
        assert value(m, "dcserve_http_response_body_bytes_total", coding="gzip") == len(gz)
        assert value(m, "dcserve_dictionary_negotiations_total", outcome="dcz") == 3
        assert value(m, "dcserve_dictionary_negotiations_total", outcome="unknownHash") == 1
        assert value(m, "dcserve_dictionary_negotiations_total", outcome="noDictionaryOffered") == 3
        assert value(m, "dcserve_variant_cache_lookups_total", result="miss") == 2
        assert value(m, "dcserve_variant_cache_lookups_total", result="hit") == 2
        assert value(m, "dcserve_compressible_identity_bytes_total") == 2 * len(V1) + 5 * len(V2)
        assert value(m, "dcserve_compressible_sent_bytes_total") == 2 * len(V1) + sum(dcz_sizes) + len(V2) + len(gz)
        # without dictionaries the dcz requests (Accept-Encoding: dcz only) would have got identity
        assert value(m, "dcserve_compressible_best_plain_bytes_total") == 2 * len(V1) + 4 * len(V2) + len(gz)
        assert value(m, "dcserve_dictionaries_stored_total") == 2  # v1 and v2 both match the rule
        assert value(m, "dcserve_stored_dictionaries") == 2
        assert value(m, "dcserve_open_connections") >= 0
        assert value(m, "dcserve_compression_duration_seconds_count", coding="dcz", level="3") >= 1


def test_health_and_readiness(dcserve_bin, config, tmp_path):
    with DCServe(dcserve_bin, ["--config", str(config)]) as s:
        for admin in (False, True):
            status, h, body = s.get("/healthz", admin=admin)
            assert status == 200 and body == b"ok\n" and h["Cache-Control"] == "no-store"
            status, _, body = s.get("/readyz", admin=admin)
            assert status == 200 and body == b"ready\n"
        s.get("/static/app.v1.js")
        shutil.rmtree(tmp_path / "store")
        status, _, body = s.get("/readyz")
        assert status == 503 and b"dictionary store" in body
        (tmp_path / "store").mkdir()
        assert s.get("/readyz")[0] == 200
    logs = s.logs()  # after the stop: the access log is written in batches, flushed at shutdown
    assert "GET /static/app.v1.js 200" in logs
    assert "/healthz" not in logs and "/readyz" not in logs


def test_server_timing_when_enabled(dcserve_bin, config):
    cfg = json.loads(config.read_text())
    cfg["compression"]["serverTiming"] = True
    config.write_text(json.dumps(cfg))
    with DCServe(dcserve_bin, ["--config", str(config)]) as s:
        _, h, _ = s.get("/static/app.v2.js", {"Accept-Encoding": "br"})
        assert re.fullmatch(r'compress;desc="br-5";dur=\d+\.\d{3}', h["Server-Timing"]), h["Server-Timing"]
        _, h, _ = s.get("/static/app.v2.js", {"Accept-Encoding": "br"})
        assert re.fullmatch(r'compress;desc="br-(5|11) cached"', h["Server-Timing"]), h["Server-Timing"]


def test_tls_handshakes_are_counted(dcserve_bin, config, tmp_path):
    from tls_support import client_context, http_get, make_ca, make_leaf, tls_connect
    ca = make_ca(tmp_path / "pki")
    leaf = make_leaf(ca, tmp_path / "pki", "server")
    args = ["--config", str(config), "--tls-port", "0", "--tls-cert", str(leaf.cert), "--tls-key", str(leaf.key)]
    with DCServe(dcserve_bin, args, tls=True) as s:
        ctx = client_context(ca)
        for _ in range(2):
            with tls_connect(ctx, s.tls_port) as sock:
                assert http_get(sock, "/static/app.v1.js", close=True)[0] == 200
        with socket_garbage(s.tls_port):
            pass
        deadline = time.monotonic() + 10
        while True:  # the failed handshake is counted when the server reads the garbage
            m = scrape(s)
            if value(m, "dcserve_tls_handshakes_total", result="failed") >= 1 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert value(m, "dcserve_tls_handshakes_total", result="completed") == 2
        assert value(m, "dcserve_tls_handshakes_total", result="failed") == 1


class socket_garbage:
    """Connects, sends bytes that are not a ClientHello, and closes."""
    def __init__(self, port: int):
        import socket
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            self.sock.recv(100)
        except OSError:
            pass
        self.sock.close()


def test_startup_precompression_serves_best_level_deltas_at_once(dcserve_bin, config, tmp_path):
    cfg = json.loads(config.read_text())
    os_root = pathlib.Path(cfg["site"]["root"])
    (os_root / "static/app.v2.js").unlink()
    with DCServe(dcserve_bin, ["--config", str(config)]) as s:  # a client gets v1: stored
        assert s.get("/static/app.v1.js")[0] == 200
    (os_root / "static/app.v1.js").unlink()
    (os_root / "static/app.v2.js").write_bytes(V2)  # redeploy
    cfg["compression"]["precompress"] = True
    cfg["compression"]["serverTiming"] = True  # names the variant's level (the ETag does not)
    config.write_text(json.dumps(cfg))
    with DCServe(dcserve_bin, ["--config", str(config)]) as s:
        deadline = time.monotonic() + 30
        while True:  # no request yet: only start-up precompression can encode dcz/dcb at level 19/11
            m = scrape(s)
            done = (value(m, "dcserve_compression_duration_seconds_count", coding="dcz", level="19") >= 1
                    and value(m, "dcserve_compression_duration_seconds_count", coding="dcb", level="11") >= 1)
            if done or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert done, "start-up precompression did not run"
        for coding, level in (("dcz", 19), ("dcb", 11)):
            _, h, _ = s.get("/static/app.v2.js", {"Accept-Encoding": coding, "Available-Dictionary": available(V1)})
            assert h["Content-Encoding"] == coding and f'desc="{coding}-{level} cached"' in h["Server-Timing"], dict(h)
        m = scrape(s)
        assert value(m, "dcserve_variant_cache_lookups_total", result="hit") == 2
        assert value(m, "dcserve_variant_cache_lookups_total", result="miss") == 0
