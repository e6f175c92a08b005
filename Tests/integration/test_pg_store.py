"""Several dcserve instances on one PostgreSQL dictionary store, against a throwaway
PostgreSQL 15 (pg_support) and the real binary; deltas decoded by independent tools."""
from __future__ import annotations

import base64
import gzip
import hashlib
import json
import pathlib
import re
import subprocess
import threading
import time
from contextlib import ExitStack, contextmanager

import pytest

from dcserve_server import DCServe
from decoders import dcb_with_brotli_cli, dcz_with_python_zstandard, dcz_with_zstd_cli, decode_plain
from pg_support import ThrowawayPostgres, postgres_server  # noqa: F401  (fixture)

from paths import ROOT
EXAMPLE = ROOT / "examples/site"
V1 = (EXAMPLE / "static/app.v1.js").read_bytes()
V2 = (EXAMPLE / "static/app.v2.js").read_bytes()
V3 = V2.replace(b"function", b"function /* v3 */")
BROWSER = {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "script"}


def available(data: bytes) -> str:
    return ":" + base64.b64encode(hashlib.sha256(data).digest()).decode() + ":"


def delta_headers(dictionary: bytes, coding: str) -> dict[str, str]:
    return {"Accept-Encoding": f"gzip, br, zstd, {coding}", "Available-Dictionary": available(dictionary)}


def make_site(tmp_path: pathlib.Path, url: str, name: str, **store) -> dict:
    """One instance's configuration: a shared document root (tmp_path/site), its own local cache."""
    root = tmp_path / "site"
    (root / "static").mkdir(parents=True, exist_ok=True)
    for n, data in (("app.v1.js", V1), ("app.v2.js", V2), ("lib.js", V2)):
        if not (root / "static" / n).exists():
            (root / "static" / n).write_bytes(data)
    cache = tmp_path / f"cache-{name}"
    config = {
        "site": {"root": str(root)},
        "store": {"kind": "postgres", "path": str(cache), "postgres": {"url": url, "connectTimeoutSeconds": 2},
                  "housekeepingSeconds": 1, **store},
        "compression": {"precompress": False},
        "admin": {"enabled": True},
        # app.*.js are dictionaries; any /static/*.js may be encoded against them (lib.js is not one).
        "dictionaries": {"rules": ["bundle"],
                         "bundle": {"resources": "/static/app.*.js", "match": "/static/*.js", "maxAge": 86400}},
    }
    path = tmp_path / f"dcserve-{name}.json"
    path.write_text(json.dumps(config))
    return {"root": root, "cache": cache, "config": str(path)}


def start(dcserve_bin, sites: list[dict], stack: ExitStack) -> list[DCServe]:
    return [stack.enter_context(DCServe(dcserve_bin, ["--config", s["config"]])) for s in sites]


def metric(server: DCServe, name: str) -> float:
    status, _, body = server.get("/metrics", admin=True)
    assert status == 200
    total = 0.0
    for line in body.decode().splitlines():
        if line.startswith(name) and (line[len(name)] in " {"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def wait_for(predicate, timeout: float, step: float = 0.02):
    """Polls `predicate` until truthy or `timeout` seconds passed (bounded); returns the last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(step)


@pytest.fixture
def three(tmp_path, postgres_server, dcserve_bin):
    _, url = postgres_server.new_database()
    sites = [make_site(tmp_path, url, n) for n in "abc"]
    return {"url": url, "sites": sites, "pg": postgres_server, "tmp": tmp_path}


def test_three_instances_share_dictionaries(dcserve_bin, three, brotli_cli):
    with ExitStack() as stack:
        a, b, c = start(dcserve_bin, three["sites"], stack)
        status, h, body = a.get("/static/app.v1.js", {"Accept-Encoding": "identity"})
        assert status == 200 and body == V1 and "Use-As-Dictionary" in h
        stored_at = time.monotonic()
        # B learns of the dictionary by notification: usable within one second, no restart.
        def b_uses_v1():
            status, h, body = b.get("/static/app.v2.js", delta_headers(V1, "dcz"))
            return (h, body) if h.get("Content-Encoding") == "dcz" else None
        got = wait_for(b_uses_v1, timeout=1.0)
        assert got, b.logs()
        assert time.monotonic() - stored_at <= 1.0
        assert dcz_with_zstd_cli(got[1], V1) == V2
        for server in (b, c):
            status, h, body = server.get("/static/app.v2.js", delta_headers(V1, "dcz"))
            assert status == 200 and h["Content-Encoding"] == "dcz", server.logs()
            assert dcz_with_zstd_cli(body, V1) == V2 and dcz_with_python_zstandard(body, V1) == V2
            status, h, body = server.get("/static/app.v2.js", delta_headers(V1, "dcb"))
            assert status == 200 and h["Content-Encoding"] == "dcb", server.logs()
            assert dcb_with_brotli_cli(body, V1, brotli_cli) == V2
        # One row per dictionary, whoever stored it; the bytes are the served bytes.
        name = three["url"].rsplit("/", 1)[1].split("?")[0]
        rows = three["pg"].psql("SELECT hash, byte_size FROM dcserve_dictionaries ORDER BY byte_size", name)
        hashes = {line.split("|")[0] for line in rows.splitlines()}
        assert hashlib.sha256(V1).hexdigest() in hashes and hashlib.sha256(V2).hexdigest() in hashes
        # Each instance read v1 from PostgreSQL at most once (then its local cache / library).
        for server in (b, c):
            for _ in range(5):
                assert server.get("/static/app.v2.js", delta_headers(V1, "dcb"))[1]["Content-Encoding"] == "dcb"
            assert metric(server, "dcserve_store_postgres_fetches_total") <= 1
        assert metric(a, "dcserve_store_postgres_up") == 1

    # Restart of all three with empty local caches: everything comes back from PostgreSQL.
    for site in three["sites"]:
        subprocess.run(["rm", "-rf", str(site["cache"])], check=True)
    with ExitStack() as stack:
        for server in start(dcserve_bin, three["sites"], stack):
            status, h, body = server.get("/static/app.v2.js", delta_headers(V1, "dcz"))
            assert status == 200 and h["Content-Encoding"] == "dcz", server.logs()
            assert dcz_with_zstd_cli(body, V1) == V2
            assert server.get("/readyz")[2].strip() == b"ready"


def test_retention_by_one_instance_is_seen_by_all(dcserve_bin, tmp_path, postgres_server):
    name, url = postgres_server.new_database()
    # Room for v2 but not for both: the byte budget removes the least recently served (#13: the
    # per-rule count cap only bounds expired dictionaries, and these are fresh for a day).
    sites = [make_site(tmp_path, url, n, maxBytes=len(V2) + len(V1) // 2) for n in "abc"]
    with ExitStack() as stack:
        a, b, c = start(dcserve_bin, sites, stack)
        assert a.get("/static/app.v1.js")[0] == 200
        # B and C use v1 for lib.js (not a dictionary itself): their libraries hold it prepared.
        for server in (b, c):
            assert wait_for(lambda: server.get("/static/lib.js", delta_headers(V1, "dcz"))[1]
                            .get("Content-Encoding") == "dcz", timeout=2), server.logs()
        # v2 stored later (a second on: recency has whole-second steps), so v1, the least recently served,
        # goes, removed by one instance.
        time.sleep(1.1)
        assert "Use-As-Dictionary" in a.get("/static/app.v2.js")[1]
        assert wait_for(lambda: postgres_server.psql("SELECT count(*) FROM dcserve_dictionaries", name) == "1", timeout=10)
        assert postgres_server.psql("SELECT hash FROM dcserve_dictionaries", name) == hashlib.sha256(V2).hexdigest()
        for server in (a, b, c):
            assert wait_for(lambda: metric(server, "dcserve_stored_dictionaries") == 1, timeout=3), server.logs()
            status, h, body = server.get("/static/lib.js", delta_headers(V1, "dcz"))
            assert status == 200 and h.get("Content-Encoding") in ("zstd", "br", "gzip"), server.logs()
            status, h, body = server.get("/static/lib.js", delta_headers(V2, "dcz"))
            assert status == 200 and h.get("Content-Encoding") == "dcz", server.logs()
        removals = [s.logs().count("dictionary removed by retention") for s in (a, b, c)]
        assert sum(1 for n in removals if n) == 1, removals


def test_postgres_down_keeps_serving_then_recovers(dcserve_bin, tmp_path, brotli_cli):
    pg = ThrowawayPostgres.scratch("fault").start()
    try:
        _, url = pg.new_database()
        sites = [make_site(tmp_path, url, n) for n in "ab"]
        root = sites[0]["root"]
        with ExitStack() as stack:
            a, b = start(dcserve_bin, sites, stack)
            assert a.get("/static/app.v1.js")[0] == 200
            # A has v1 cached (it stored it); B has never loaded it.
            assert a.get("/static/app.v2.js", delta_headers(V1, "dcz"))[1]["Content-Encoding"] == "dcz"
            assert wait_for(lambda: b.get("/readyz")[2].strip() == b"ready", timeout=2)

            pg.stop()
            for server in (a, b):
                assert wait_for(lambda: b"degraded" in server.get("/readyz")[2], timeout=5), server.logs()
                status, _, body = server.get("/readyz")
                assert status == 200 and b"PostgreSQL" in body
                assert metric(server, "dcserve_store_postgres_up") == 0
            (root / "static/app.v3.js").write_bytes(V3)
            statuses = []
            for _ in range(10):
                # A: delta from its cached dictionary.
                status, h, body = a.get("/static/app.v2.js", delta_headers(V1, "dcz"))
                statuses.append(status)
                assert h["Content-Encoding"] == "dcz" and dcz_with_zstd_cli(body, V1) == V2
                # B: the dictionary is not cached here: a plain coding, decoded independently.
                status, h, body = b.get("/static/app.v2.js", delta_headers(V1, "dcz"))
                statuses.append(status)
                assert h.get("Content-Encoding") in ("zstd", "br", "gzip")
                assert decode_plain(body, h["Content-Encoding"], brotli_cli) == V2
                # A new dictionary cannot be stored: it is served, but not advertised.
                status, h, body = a.get("/static/app.v3.js", {"Accept-Encoding": "identity"})
                statuses.append(status)
                assert body == V3 and "Use-As-Dictionary" not in h
            assert statuses == [200] * len(statuses)

            pg.start()
            for server in (a, b):
                assert wait_for(lambda: server.get("/readyz")[2].strip() == b"ready", timeout=10), server.logs()
                assert metric(server, "dcserve_store_postgres_up") == 1
            # Recovered without a restart: v3 is stored and advertised now, B reads v1 from PostgreSQL.
            status, h, body = a.get("/static/app.v3.js", {"Accept-Encoding": "identity"})
            assert status == 200 and "Use-As-Dictionary" in h, a.logs()
            status, h, body = b.get("/static/app.v2.js", delta_headers(V1, "dcz"))
            assert h["Content-Encoding"] == "dcz" and dcz_with_zstd_cli(body, V1) == V2
            assert wait_for(lambda: b.get("/static/app.v2.js", delta_headers(V3, "dcb"))[1].get("Content-Encoding") == "dcb",
                            timeout=1)
    finally:
        pg.discard()


def test_corrupted_row_is_never_used(dcserve_bin, tmp_path, postgres_server, brotli_cli):
    name, url = postgres_server.new_database()
    sites = [make_site(tmp_path, url, n) for n in "ab"]
    with ExitStack() as stack:
        a, b = start(dcserve_bin, sites, stack)
        assert a.get("/static/app.v1.js")[0] == 200
        v1 = hashlib.sha256(V1).hexdigest()
        postgres_server.psql(
            f"UPDATE dcserve_dictionaries SET bytes = overlay(bytes placing '\\x00ff'::bytea from 100) WHERE hash = '{v1}'", name)
        for _ in range(3):
            status, h, body = b.get("/static/app.v2.js", delta_headers(V1, "dcz"))
            assert status == 200 and h.get("Content-Encoding") != "dcz"
            assert decode_plain(body, h.get("Content-Encoding", ""), brotli_cli) == V2
        assert "corrupted" in b.logs()
        assert metric(b, "dcserve_store_corrupted_total") >= 1
        assert metric(b, "dcserve_store_postgres_fetches_total") == 1  # detected once, not re-read per request
        # Storing the bytes again (A serves v1 after a restart) repairs the row; B then uses it.
    with ExitStack() as stack:
        a, b = start(dcserve_bin, sites, stack)
        assert a.get("/static/app.v1.js")[0] == 200
        got = wait_for(lambda: b.get("/static/app.v2.js", delta_headers(V1, "dcz"))[1].get("Content-Encoding") == "dcz",
                       timeout=2)
        assert got, b.logs()


def test_quick_mode_store_url_and_clear_errors(dcserve_bin, tmp_path, postgres_server):
    name, url = postgres_server.new_database()
    root = tmp_path / "site"
    (root / "js").mkdir(parents=True)
    (root / "js/app.1.js").write_bytes(V1)
    with DCServe(dcserve_bin, ["--root", str(root), "--dictionaries", "/js/app.*.js", "--store", url],
                 cwd=str(tmp_path)) as s:
        assert "Use-As-Dictionary" in s.get("/js/app.1.js")[1]
        assert postgres_server.psql("SELECT count(*) FROM dcserve_dictionaries", name) == "1"
        assert "dcserve-test" not in s.logs()  # the password is never logged
    # Unreachable at start: a clear error naming the server, without the password; exit non-zero.
    bad = f"postgres://dcserve:sekrit@127.0.0.1:1/nothing"
    out = subprocess.run([dcserve_bin, "serve", "--root", str(root), "--port", "0", "--store", bad],
                         capture_output=True, text=True, timeout=60, cwd=str(tmp_path))
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert "cannot open the PostgreSQL dictionary store at postgres://dcserve:***@127.0.0.1:1/nothing" in text, text
    assert "sekrit" not in text
    out = subprocess.run([dcserve_bin, "serve", "--root", str(root), "--port", "0", "--store", "postgres://host-only"],
                         capture_output=True, text=True, timeout=60, cwd=str(tmp_path))
    assert out.returncode != 0 and "store.postgres" in out.stdout + out.stderr


TABLE_LOCKED = ("SELECT count(*) FROM pg_locks WHERE granted AND mode = 'AccessExclusiveLock' "
                "AND relation = 'dcserve_dictionaries'::regclass")
BLOCKED_READ = ("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND query LIKE '%FROM dcserve_dictionaries%'")


@contextmanager
def store_with_a_locked_table(dcserve_bin, tmp_path, postgres_server, extra_files: dict[str, bytes] | None = None):
    """Instance A stores app.v1.js as a dictionary; instance B (one event loop, an empty local cache, so it
    knows v1's record but not its bytes) starts; then a psql session holds `LOCK TABLE
    dcserve_dictionaries` until the block ends (bounded: 60 s). Yields (B, database name)."""
    name, url = postgres_server.new_database()
    site_a, site_b = make_site(tmp_path, url, "a"), make_site(tmp_path, url, "b")
    for path, data in (extra_files or {}).items():
        (site_a["root"] / path).write_bytes(data)
    config = json.loads(pathlib.Path(site_b["config"]).read_text())
    config["server"] = {"eventLoops": 1}
    config["store"]["postgres"]["connectTimeoutSeconds"] = 60  # reads wait for the lock, not a timeout
    pathlib.Path(site_b["config"]).write_text(json.dumps(config))
    with ExitStack() as stack:
        (a,) = start(dcserve_bin, [site_a], stack)
        assert a.get("/static/app.v1.js", {"Accept-Encoding": "identity"})[0] == 200
        (b,) = start(dcserve_bin, [site_b], stack)
        assert b.get("/readyz")[2].strip() == b"ready"
        locker = subprocess.Popen(postgres_server.psql_command(
            "BEGIN; LOCK TABLE dcserve_dictionaries IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(60); COMMIT;", name),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            assert wait_for(lambda: postgres_server.psql(TABLE_LOCKED, name) == "1", timeout=20)
            yield b, name
        finally:
            postgres_server.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                 "WHERE query LIKE '%pg_sleep(60)%' AND pid <> pg_backend_pid()")
            locker.wait(timeout=30)


def test_a_slow_postgres_read_does_not_stall_the_event_loop(dcserve_bin, tmp_path, postgres_server):
    """A dictionary read from PostgreSQL runs off the event loop: while a table lock holds that read,
    the same (only) event loop still answers other clients; once the lock goes, the waiting request
    gets its delta."""
    delta: dict = {}
    with store_with_a_locked_table(dcserve_bin, tmp_path, postgres_server) as (b, name):
        waiting = threading.Thread(target=lambda: delta.update(
            zip(("status", "headers", "body"), b.get("/static/app.v2.js", delta_headers(V1, "dcz")))))
        waiting.start()
        assert wait_for(lambda: postgres_server.psql(BLOCKED_READ, name) != "0", timeout=20), b.logs()
        # The loop is free: another client is answered while the read waits.
        with b.connect(timeout=10) as s:
            s.sendall(b"GET /static/lib.js HTTP/1.1\r\nHost: t\r\nAccept-Encoding: identity\r\n"
                      b"Connection: close\r\n\r\n")
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(V2), answer[:200]
        assert waiting.is_alive() and postgres_server.psql(TABLE_LOCKED, name) == "1"
    waiting.join(timeout=30)
    assert delta["status"] == 200 and delta["headers"]["Content-Encoding"] == "dcz"
    assert dcz_with_zstd_cli(delta["body"], V1) == V2


def test_store_reads_waiting_on_postgres_do_not_hold_up_other_off_loop_work(dcserve_bin, tmp_path, postgres_server):
    """Requests whose dictionary must be read from PostgreSQL wait on threads of their own: while a
    table lock holds twelve of them (more than those threads), a large response that is compressed off
    the event loop is still answered at once (when they waited in Dispatch's shared pool, which adds
    about one thread per second, it came only after them); once the lock goes, all twelve get dcz."""
    big = b"".join(b"const line%06d = 'a compressible line of a large script';\n" % i for i in range(5000))
    deltas: list = [None] * 12

    def fetch(i: int) -> None:
        deltas[i] = b.get("/static/app.v2.js", delta_headers(V1, "dcz"))

    # 300 KB: compressed off the loop.
    with store_with_a_locked_table(dcserve_bin, tmp_path, postgres_server, {"static/big.js": big}) as (b, name):
        waiting = [threading.Thread(target=fetch, args=(i,)) for i in range(len(deltas))]
        for t in waiting:
            t.start()
        assert wait_for(lambda: postgres_server.psql(BLOCKED_READ, name) != "0", timeout=20), b.logs()
        time.sleep(0.5)  # every one of the twelve has reached its store read (or its queue)
        started = time.monotonic()
        status, headers, body = b.get("/static/big.js", {"Accept-Encoding": "gzip"})
        elapsed = time.monotonic() - started
        assert status == 200 and headers.get("Content-Encoding") == "gzip"
        assert gzip.decompress(body) == big
        assert elapsed < 4, f"the large response waited {elapsed:.1f} s behind the store reads"
        assert all(t.is_alive() for t in waiting) and postgres_server.psql(TABLE_LOCKED, name) == "1"
    for t in waiting:
        t.join(timeout=30)
    for status, headers, body in deltas:
        assert status == 200 and headers["Content-Encoding"] == "dcz"
        assert dcz_with_zstd_cli(body, V1) == V2


def test_a_postgres_outage_stops_advertising_live_versions(dcserve_bin, tmp_path):
    """While PostgreSQL is down, live versions cannot be stored: they are not advertised (a client
    could never use them), and the write error is logged at most once a minute, not per request.
    Before the fix every response of a 10 s outage stayed advertised (467 of 467)."""
    import itertools
    import random as random_module
    from upstream_support import ScriptedUpstream

    counter = itertools.count()

    def news(headers):
        n = next(counter)
        body = json.dumps({"n": n, "items": [random_module.Random(n).random() for _ in range(300)]}).encode()
        return 200, [("Content-Type", "application/json"), ("Cache-Control", "max-age=60")], body

    pg = ThrowawayPostgres.scratch("live-outage").start()
    try:
        _, url = pg.new_database()
        with ScriptedUpstream({"/latest_news": news}) as up, \
                DCServe(dcserve_bin, ["--upstream", up.base, "--store", url, "--dictionaries", "/latest_news",
                                      ], cwd=str(tmp_path)) as server:
            status, h, _ = server.get("/latest_news", {"Accept-Encoding": "identity"})
            assert status == 200 and "Use-As-Dictionary" in h, server.logs()
            pg.stop()
            assert wait_for(lambda: b"degraded" in server.get("/readyz")[2], timeout=10), server.logs()
            advertised = 0
            deadline = time.monotonic() + 5
            count = 0
            while time.monotonic() < deadline:
                status, h, _ = server.get("/latest_news", {"Accept-Encoding": "identity"})
                assert status == 200
                advertised += "Use-As-Dictionary" in h
                count += 1
            assert count > 20 and advertised == 0, (count, advertised)
            time.sleep(0.5)
            assert server.logs().count("cannot store live dictionary") <= 2, server.logs()[-2000:]
            pg.start()
            assert wait_for(lambda: server.get("/readyz")[2].strip() == b"ready", timeout=15), server.logs()
            status, h, _ = server.get("/latest_news", {"Accept-Encoding": "identity"})
            assert "Use-As-Dictionary" in h
    finally:
        pg.discard()
