"""One user's data never reaches another, and what dcserve sends is the right bytes: the
anonymous partition takes no credentialed or private exchange, a repeated partition key means no
partition, store files are private, undecodable upstream bodies never become dictionaries, a coding
the client refused is never sent, integrity fields of another representation are dropped, a proxied
HEAD has its GET's head, variant ETags survive the best-level re-encode, a large file gets a real dcz
delta, the decision names what was sent, and a store that cannot write stops advertising and says so.
Each test fails on the binary before these fixes (1b7d2c6). Deltas are decoded with the zstd CLI.
"""
from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import pathlib
import random
import socket
import stat
import subprocess
import time

import pytest
import zstandard

import store_records
from dcserve_server import DCServe
from decision_support import request
from decoders import dcz_with_zstd_cli, decode_plain
from upstream_support import ScriptedUpstream

LIFETIME = "max-age=0, stale-while-revalidate=86400"


def available(body: bytes) -> str:
    return ":" + base64.b64encode(hashlib.sha256(body).digest()).decode() + ":"


def quick(dcserve_bin, upstream, tmp_path, *args, env=None, lifetime=LIFETIME):
    return DCServe(dcserve_bin, ["--upstream", upstream.base, "--store", str(tmp_path / "store"),
                                 *(["--dictionary-lifetime", lifetime] if lifetime else []), *args], env=env)


def store_files(tmp_path) -> list[str]:
    """What the store holds: its files (the directory store's are named by hash), and the records of
    its SQLite database as `<hash>.<partition>`."""
    store = tmp_path / "store"
    names = sorted(p.name for p in store.iterdir() if p.is_file()
                   and not p.name.startswith((".", "partition-secret", "README", store_records.DATABASE)))
    return names + sorted(f"{r['hash']}.{r['partition'] or ''}" for r in store_records.records(store))


def json_body(n: int, extra: str = "") -> bytes:
    return json.dumps({"items": [{"id": i, "title": f"item {i} {extra}"} for i in range(n)]}).encode()


# --- 1. The anonymous partition takes no credentialed or private exchange ---------------------------

def test_anonymous_partition_takes_no_credentialed_or_private_exchange(dcserve_bin, tmp_path):
    """With --partition-header authorization, a request with a Cookie (no Authorization) is in the
    anonymous partition every header-less client shares: its private response is not advertised nor
    stored, and an unauthenticated client naming its hash gets no delta (no confirmation oracle)."""
    def me(headers):
        cookie = headers.get("Cookie") or ""
        secret = cookie.split("secret=", 1)[1] if "secret=" in cookie else "none"
        return 200, [("Content-Type", "application/json"), ("Cache-Control", "private, max-age=60")], \
            json_body(40, f"account pin {secret}")

    def news(headers):
        return 200, [("Content-Type", "application/json"), ("Cache-Control", "max-age=60")], json_body(40, "news")

    with ScriptedUpstream({"/api/me": me, "/api/news": news}) as up, \
            quick(dcserve_bin, up, tmp_path, "--dictionaries", "/api/*", "--partition-header", "authorization") as server:
        status, headers, victim = request(server.port, "/api/me", {"Cookie": "secret=4821", "Accept-Encoding": "identity"})
        assert status == 200 and b"4821" in victim
        assert "Use-As-Dictionary" not in headers, dict(headers)
        # The attacker (no credentials at all) names the victim's body: no delta, nothing to confirm.
        status, headers, body = request(server.port, "/api/me", {
            "Accept-Encoding": "gzip, dcz, dcb", "Available-Dictionary": available(victim)})
        assert headers.get("Content-Encoding") not in ("dcz", "dcb"), dict(headers)
        # Nothing of the victim's went to the store.
        assert not any(hashlib.sha256(victim).hexdigest() in name for name in store_files(tmp_path))
        # A clean anonymous exchange still works (advertised, then a delta).
        status, headers, first = request(server.port, "/api/news", {"Accept-Encoding": "identity"})
        assert "Use-As-Dictionary" in headers, dict(headers)
        time.sleep(0.3)
        status, headers, body = request(server.port, "/api/news", {
            "Accept-Encoding": "dcz", "Available-Dictionary": available(first)})
        assert headers.get("Content-Encoding") == "dcz", dict(headers)
        assert dcz_with_zstd_cli(body, first) == json_body(40, "news")
        # ... but not to a credentialed anonymous request: its response is not delta-coded there.
        status, headers, body = request(server.port, "/api/news", {
            "Accept-Encoding": "dcz", "Available-Dictionary": available(first), "Cookie": "session=abc"})
        assert headers.get("Content-Encoding") != "dcz" and "Use-As-Dictionary" not in headers, dict(headers)
        assert "reason=credentialed-request" in headers["DCServe-Decision"], headers["DCServe-Decision"]


def test_anonymous_history_takes_no_credentialed_chat(dcserve_bin, tmp_path):
    """A chat read with a Cookie but no partition key never feeds the anonymous partition's history
    window: no dictionary is built from it (no Link is ever offered), so nobody can download it."""
    messages = []

    def chat(headers):
        return 200, [("Content-Type", "application/json"), ("Cache-Control", "no-cache")], \
            json.dumps({"messages": messages}).encode()

    with ScriptedUpstream({"/api/chats/7/messages": chat}) as up, \
            quick(dcserve_bin, up, tmp_path, "--history-dictionaries", "/api/chats/:chat/*",
                  "--partition-header", "authorization", lifetime=None) as server:
        for i in range(60):
            messages.append({"from": "alice", "text": f"my pin is 4821, message {i} " + "x" * 200})
            status, headers, _ = request(server.port, "/api/chats/7/messages", {"Cookie": "sid=alice"})
            assert status == 200
            assert "Link" not in headers, dict(headers)


# --- 2. Repeated partition keys ---------------------------------------------------------------

def test_two_authorization_lines_get_400(dcserve_bin, tmp_path):
    with ScriptedUpstream({}) as up, quick(dcserve_bin, up, tmp_path, "--dictionaries", "/api/*") as server:
        s = server.connect()
        s.sendall(b"GET /api/x HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer alice\r\nAuthorization: Bearer bob\r\n\r\n")
        reply = s.recv(65536)
        s.close()
        assert reply.startswith(b"HTTP/1.1 400"), reply[:200]
        assert not up.requests


def test_a_partition_cookie_named_twice_means_no_partition(dcserve_bin, tmp_path):
    """`Cookie: sid=X; sid=Y`: back ends differ on which one they authenticate, so dcserve uses none:
    nothing advertised or stored, no delta even against the requester's own earlier version."""
    def cal(headers):
        return 200, [("Content-Type", "application/json")], json_body(40, "calendar of " + (headers.get("Cookie") or ""))

    config = tmp_path / "c.json"
    config.write_text(json.dumps({
        "server": {"host": "127.0.0.1", "port": 0, "decisionHeader": True},
        "store": {"path": str(tmp_path / "store")},
        "upstreams": {"names": ["api"], "api": {"servers": ["http://127.0.0.1:1"]}},
        "routes": {"names": ["api"], "api": {"prefix": "/", "upstream": "api"}},
        "dictionaries": {"rules": ["cal"], "cal": {"match": "/api/calendar", "upstreamVersions": 2, "lifetime": LIFETIME,
                                                   "partition": {"cookie": "sid"}}},
    }))
    with ScriptedUpstream({"/api/calendar": cal}) as up:
        config.write_text(config.read_text().replace("http://127.0.0.1:1", up.base))
        with DCServe(dcserve_bin, ["--config", str(config)]) as server:
            status, headers, own = request(server.port, "/api/calendar", {"Cookie": "sid=victim", "Accept-Encoding": "identity"})
            assert "Use-As-Dictionary" in headers
            time.sleep(0.3)
            stored = store_files(tmp_path)
            for cookie in ("sid=victim; sid=attacker", "sid=victim; sid=victim"):
                status, headers, body = request(server.port, "/api/calendar", {
                    "Cookie": cookie, "Accept-Encoding": "dcz, gzip", "Available-Dictionary": available(own)})
                assert status == 200
                assert "Use-As-Dictionary" not in headers and headers.get("Content-Encoding") != "dcz", dict(headers)
                assert "reason=ambiguous-partition" in headers["DCServe-Decision"], headers["DCServe-Decision"]
            time.sleep(0.3)
            assert store_files(tmp_path) == stored


# --- 3. Store files are private ------------------------------------------------------------------

def test_store_files_are_private_and_old_stores_are_tightened(dcserve_bin, tmp_path):
    store = tmp_path / "store"
    store.mkdir(mode=0o755)
    os.chmod(store, 0o755)
    old = store / ("0" * 64)
    old.write_bytes(b"x")
    os.chmod(old, 0o644)
    with ScriptedUpstream({"/api/news": lambda h: (200, [("Cache-Control", "max-age=60")], json_body(30))}) as up, \
            quick(dcserve_bin, up, tmp_path, "--dictionaries", "/api/*") as server:
        status, headers, _ = request(server.port, "/api/news")
        assert "Use-As-Dictionary" in headers
        time.sleep(0.5)
        assert stat.S_IMODE(os.stat(store).st_mode) == 0o700
        files = [p for p in store.rglob("*") if p.is_file()]
        assert len(files) >= 2
        for p in files:
            assert stat.S_IMODE(os.stat(p).st_mode) == 0o600, (p, oct(os.stat(p).st_mode))


# --- 5, 19. Undecodable upstream bodies never become dictionaries; the decision names the coding ---

@pytest.mark.parametrize("coding,body", [
    ("gzip", gzip.compress(json_body(60))[:-30]),                       # truncated gzip
    ("zstd", zstandard.ZstdCompressor().compress(json_body(60))[:-20]),  # truncated zstd
    ("dcz", b"\x5e\x2a\x4d\x18\x20\x00\x00\x00" + bytes(32) + b"not really"),
], ids=["truncated-gzip", "truncated-zstd", "upstream-dcz"])
def test_an_undecodable_upstream_body_is_not_a_dictionary(dcserve_bin, tmp_path, coding, body):
    def news(headers):
        return 200, [("Content-Type", "application/json"), ("Content-Encoding", coding), ("Cache-Control", "max-age=60")], body

    with ScriptedUpstream({"/api/news": news}) as up, quick(dcserve_bin, up, tmp_path, "--dictionaries", "/api/*") as server:
        status, headers, got = request(server.port, "/api/news", {"Accept-Encoding": f"{coding}, gzip, br, zstd"})
        assert status == 200 and got == body
        assert "Use-As-Dictionary" not in headers, dict(headers)
        assert headers["Content-Encoding"] == coding
        assert headers["DCServe-Decision"].startswith(f"plain={coding} "), headers["DCServe-Decision"]
        time.sleep(0.3)
        assert store_files(tmp_path) == []


# --- 6. A coding the client refused is never sent ---------------------------------------------------

def test_a_coding_the_client_refused_is_never_sent(dcserve_bin, tmp_path):
    """The upstream's zstd body is over the decode cap (1 MB here): a client accepting only identity
    gets it decoded while it is sent; a corrupt one gets 502. Never `Content-Encoding: zstd`."""
    big = json_body(30000)  # ~1.3 MB
    assert len(big) > 1 << 20
    frame = zstandard.ZstdCompressor().compress(big)
    routes = {
        "/big": lambda h: (200, [("Content-Type", "application/json"), ("Content-Encoding", "zstd")], frame),
        "/corrupt": lambda h: (200, [("Content-Type", "application/json"), ("Content-Encoding", "zstd")], frame[:100]),
    }
    with ScriptedUpstream(routes) as up:
        config = tmp_path / "c.json"
        config.write_text(json.dumps({
            "server": {"host": "127.0.0.1", "port": 0},
            "store": {"path": str(tmp_path / "store")},
            "upstreams": {"names": ["api"], "api": {"servers": [up.base], "maxDecodedBodyBytes": 1 << 20}},
            "routes": {"names": ["api"], "api": {"prefix": "/", "upstream": "api"}},
        }))
        with DCServe(dcserve_bin, ["--config", str(config)]) as server:
            for ae in ("identity", None, "gzip"):
                status, headers, body = request(server.port, "/big", {"Accept-Encoding": ae} if ae else {})
                assert status == 200
                assert headers.get("Content-Encoding") in (None, "identity", "gzip"), dict(headers)
                assert decode_plain(body, headers.get("Content-Encoding") or "", "") == big
            status, headers, body = request(server.port, "/corrupt", {"Accept-Encoding": "identity"})
            assert status == 502 and headers.get("Content-Encoding") is None, (status, dict(headers))


# --- 8. Integrity fields of another representation ---------------------------------------------------

def test_integrity_fields_are_dropped_when_the_coding_changes(dcserve_bin, tmp_path):
    body = json_body(60)
    digest = "sha-256=:" + base64.b64encode(hashlib.sha256(body).digest()).decode() + ":"
    fields = [("Content-Type", "application/json"), ("Content-Digest", digest), ("Repr-Digest", digest),
              ("Content-MD5", base64.b64encode(hashlib.md5(body).digest()).decode())]
    gz = gzip.compress(body)
    gz_digest = "sha-256=:" + base64.b64encode(hashlib.sha256(gz).digest()).decode() + ":"
    routes = {"/plain": lambda h: (200, fields, body),
              "/gz": lambda h: (200, [("Content-Type", "application/json"), ("Content-Encoding", "gzip"),
                                      ("Content-Digest", gz_digest)], gz)}
    with ScriptedUpstream(routes) as up, quick(dcserve_bin, up, tmp_path, "--dictionaries", "/nothing") as server:
        status, headers, got = request(server.port, "/plain", {"Accept-Encoding": "br"})
        assert headers["Content-Encoding"] == "br"
        for name in ("Content-Digest", "Repr-Digest", "Content-MD5"):
            assert name not in headers, dict(headers)
        status, headers, got = request(server.port, "/plain", {"Accept-Encoding": "identity"})
        assert got == body and headers["Content-Digest"] == digest  # unchanged representation: kept
        status, headers, got = request(server.port, "/gz", {"Accept-Encoding": "br"})
        assert headers["Content-Encoding"] == "br" and "Content-Digest" not in headers, dict(headers)


# --- 12. A proxied HEAD has its GET's head ------------------------------------------------------------

def test_a_proxied_head_has_the_head_of_its_get(dcserve_bin, tmp_path):
    body = json_body(80)
    routes = {"/api/news": lambda h: (200, [("Content-Type", "application/json"), ("ETag", '"n1"'),
                                            ("Cache-Control", "max-age=60")], body)}
    with ScriptedUpstream(routes) as up, quick(dcserve_bin, up, tmp_path, "--dictionaries", "/api/*") as server:
        for ae in ({"Accept-Encoding": "br"}, {"Accept-Encoding": "identity"}):
            _, get, _ = request(server.port, "/api/news", ae)
            _, head, nothing = request(server.port, "/api/news", ae, method="HEAD")
            assert nothing == b""
            # (The br length may differ: the best-level encode can land between the two requests.)
            names = ("Vary", "Use-As-Dictionary", "Cache-Control", "ETag", "Content-Encoding") + \
                (("Content-Length",) if ae["Accept-Encoding"] == "identity" else ())
            for name in names:
                assert head.get(name) == get.get(name), (name, dict(head), dict(get))
            assert head.get("Content-Length")


# --- 13. Variant ETags survive the best-level re-encode -------------------------------------------

def test_a_variant_etag_survives_the_best_level_encode(dcserve_bin, tmp_path):
    site = tmp_path / "site"
    (site / "static").mkdir(parents=True)
    (site / "static/app.js").write_bytes(b"".join(
        f"function f{i}(a,b){{return a*{i}+b+{random.Random(i).randrange(1000)};}}\n".encode() for i in range(3000)))
    with DCServe(dcserve_bin, ["--root", str(site), "--store", str(tmp_path / "store"),
                               "--dictionaries", "/static/*"]) as server:
        _, headers, first = request(server.port, "/static/app.js", {"Accept-Encoding": "br"})
        etag = headers["ETag"]
        deadline = time.monotonic() + 20
        while True:  # until the background brotli-11 encode replaced the fast one
            _, headers, body = request(server.port, "/static/app.js", {"Accept-Encoding": "br"})
            if body != first or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert body != first, "the best-level encode never landed"
        assert headers["ETag"] == etag
        status, headers, body = request(server.port, "/static/app.js", {"Accept-Encoding": "br", "If-None-Match": etag})
        assert status == 304 and body == b"", (status, dict(headers))


# --- 15. A 12 MB file gets a real dcz delta ------------------------------------------------------------

def test_a_large_file_gets_a_small_dcz(dcserve_bin, tmp_path):
    rng = random.Random(15)
    v1 = bytearray(rng.randbytes(12_000_000))
    v2 = bytearray(v1)
    for _ in range(200):
        i = rng.randrange(len(v2) - 10)
        v2[i:i + 8] = rng.randbytes(8)
    site = tmp_path / "site"
    (site / "big").mkdir(parents=True)
    (site / "big/data.v1.txt").write_bytes(v1)
    (site / "big/data.v2.txt").write_bytes(v2)
    with DCServe(dcserve_bin, ["--root", str(site), "--store", str(tmp_path / "store"),
                               "--dictionaries", "/big/*"]) as server:
        _, headers, got = request(server.port, "/big/data.v1.txt", {"Accept-Encoding": "identity"})
        assert got == v1 and "Use-As-Dictionary" in headers
        _, headers, body = request(server.port, "/big/data.v2.txt", {
            "Accept-Encoding": "dcz", "Available-Dictionary": available(bytes(v1))})
        assert headers["Content-Encoding"] == "dcz", dict(headers)
        assert len(body) < 100_000, len(body)
        assert dcz_with_zstd_cli(body, bytes(v1)) == v2


# --- 21. A store that cannot write stops advertising and says so ----------------------------------

def test_a_full_store_stops_advertising_and_readyz_says_degraded(dcserve_bin, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (CI runs as root)")
    store = tmp_path / "store"
    store.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(store)], check=True)
    try:
        n = [0]

        def news(headers):
            n[0] += 1
            return 200, [("Content-Type", "application/json"), ("Cache-Control", "max-age=60")], \
                bytes(random.Random(n[0]).randbytes(40_000)).hex().encode()[:60_000]

        with ScriptedUpstream({"/api/news": news}) as up, \
                DCServe(dcserve_bin, ["--upstream", up.base, "--store", str(store), "--dictionary-lifetime", LIFETIME,
                                      "--dictionaries", "/api/*"]) as server:
            advertised = []
            for i in range(30):
                _, headers, _ = request(server.port, "/api/news", {"Accept-Encoding": "identity"})
                advertised.append("Use-As-Dictionary" in headers)
                time.sleep(0.05)
            time.sleep(0.5)
            status, _, text = server.get("/readyz", admin=True)
            assert status == 200 and b"degraded" in text and b"store writes failing" in text, text
            # The first versions were advertised before the first failure; then none until writes work.
            assert advertised[0] and not any(advertised[-10:]), advertised
            errors = server.logs().count("cannot store")
            assert 1 <= errors <= 2, errors  # rate-limited: one line a minute
    finally:
        subprocess.run(["umount", "-l", str(store)])
