"""Settings and start-up against the real binary: nonsense durations and sizes refused with the
key or flag named, SIGTERM with the longest valid deadline still saves the store, a
start-up failure with a busy store exits cleanly, and quick mode `--upstream`."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time

import pytest

import store_records
from conftest import run
from dcserve_server import DCServe

from paths import ROOT
V1 = (ROOT / "examples/site/static/app.v1.js").read_bytes()


@pytest.fixture
def quick(tmp_path):
    """Quick-mode arguments over a tiny site and a fresh store."""
    root = tmp_path / "site"
    (root / "static").mkdir(parents=True)
    (root / "static/app.v1.js").write_bytes(V1)
    return ["--root", str(root), "--store", str(tmp_path / "store"), "--dictionaries", "/static/app.*.js"]


def refused(dcserve_bin, args, env=None, cwd=None):
    """Runs `serve` expecting a refusal at start-up; returns its stderr."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    p = run(dcserve_bin, "serve", "--port", "0", "--no-admin", *args, check=False, timeout=30, env=full_env, cwd=cwd)
    err = p.stderr.decode(errors="replace")
    # 1: our message; 64: ArgumentParser's usage error. Never a trap (132/133/134/139, negative: signal).
    assert p.returncode in (1, 64), f"exit {p.returncode}: {err}"
    assert "listening on" not in err and "Fatal error" not in err
    return err


@pytest.mark.parametrize("flag,value", [
    ("--header-timeout", "1e300"), ("--header-timeout", "inf"), ("--header-timeout", "nan"),
    ("--header-timeout", "0"), ("--header-timeout", "-1"), ("--body-timeout", "infinity"),
    ("--write-timeout", "1e-9"), ("--idle-timeout", "1e300"), ("--shutdown-timeout", "9223372036854775807"),
    ("--shutdown-timeout", "-1"), ("--max-body-bytes", "-1"), ("--max-body-bytes", "9223372036854775807"),
    ("--max-connections", "0"), ("--max-requests-per-connection", "0"), ("--event-loops", "0"),
    ("--event-loops", "9223372036854775807"), ("--log-level", "loud"),
])
def test_nonsense_flags_are_refused_naming_the_flag(dcserve_bin, quick, flag, value):
    err = refused(dcserve_bin, [*quick, f"{flag}={value}"])
    assert flag in err, err


def test_overflowing_integer_flag_is_a_usage_error(dcserve_bin, quick):
    err = refused(dcserve_bin, [*quick, "--max-body-bytes=99999999999999999999"])
    assert "--max-body-bytes" in err


@pytest.mark.parametrize("variable,value,key", [
    ("DCSERVE_SERVER_HEADER_TIMEOUT_SECONDS", "inf", "server.headerTimeoutSeconds"),
    ("DCSERVE_SERVER_HEADER_TIMEOUT_SECONDS", "nan", "server.headerTimeoutSeconds"),
    ("DCSERVE_SERVER_SHUTDOWN_DEADLINE_SECONDS", "9223372036854775807", "server.shutdownDeadlineSeconds"),
    ("DCSERVE_SERVER_IDLE_TIMEOUT_SECONDS", "1e300", "server.idleTimeoutSeconds"),
    ("DCSERVE_SERVER_MAX_BODY_BYTES", "-5", "server.maxBodyBytes"),
    ("DCSERVE_STORE_MAX_BYTES", "9223372036854775807", "store.maxBytes"),
    ("DCSERVE_STORE_READ_THREADS", "0", "store.readThreads"),
    ("DCSERVE_TLS_HANDSHAKE_TIMEOUT_SECONDS", "-inf", "tls.handshakeTimeoutSeconds"),
])
def test_nonsense_environment_is_refused_naming_the_key(dcserve_bin, tmp_path, variable, value, key):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"site": {"root": str(ROOT / "examples/site")}, "store": {"path": str(tmp_path / "store")}}))
    err = refused(dcserve_bin, ["--config", str(cfg)], env={variable: value})
    assert f"invalid configuration: {key}:" in err, err


@pytest.mark.parametrize("section,key,value", [
    ("server", "shutdownDeadlineSeconds", 9223372036854775807),
    ("server", "shutdownDeadlineSeconds", 1e300),
    ("server", "headerTimeoutSeconds", 1e300),
    ("server", "maxBodyBytes", -1),
    ("server", "maxConnections", 9223372036854775807),
    ("store", "retainAfterExpirySeconds", 9223372036854775807),
    ("store", "readThreads", 100000),
    ("compression", "variantCacheBytes", -1),
])
def test_nonsense_file_values_are_refused_naming_the_key(dcserve_bin, tmp_path, section, key, value):
    config = {"site": {"root": str(ROOT / "examples/site")}, "store": {"path": str(tmp_path / "store")}}
    config.setdefault(section, {})[key] = value
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(config))
    err = refused(dcserve_bin, ["--config", str(cfg)])
    assert f"invalid configuration: {section}.{key}:" in err, err


def test_server_settings_from_the_file_apply(dcserve_bin, tmp_path):
    """server.maxBodyBytes from the file: a larger body gets 413; the flag overrides the file."""
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"site": {"root": str(ROOT / "examples/site")}, "store": {"path": str(tmp_path / "store")},
                               "server": {"maxBodyBytes": 100, "logLevel": "warning"}}))
    with DCServe(dcserve_bin, ["--config", str(cfg), "--log-level", "info"]) as s:
        sock = s.connect()
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\n\r\n" + b"x" * 101)
        assert sock.recv(4096).startswith(b"HTTP/1.1 413")
        sock.close()
    with DCServe(dcserve_bin, ["--config", str(cfg), "--log-level", "info", "--max-body-bytes", "1000"]) as s:
        sock = s.connect()
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\n\r\n" + b"x" * 101)
        assert not sock.recv(4096).startswith(b"HTTP/1.1 413")
        sock.close()


def test_sigterm_with_the_longest_valid_deadline_saves_the_store(dcserve_bin, quick, tmp_path):
    store = tmp_path / "store"
    with DCServe(dcserve_bin, [*quick, "--shutdown-timeout", "31536000"]) as s:
        assert s.get("/static/app.v1.js")[0] == 200
        [before] = store_records.records(store)
        time.sleep(1.1)  # lastServed has whole-second resolution
        assert s.get("/static/app.v1.js")[0] == 200  # marks the dictionary served: saved at shutdown
        started = time.monotonic()
        assert s.stop() == 0
        assert time.monotonic() - started < 10
    [after] = store_records.records(store)
    assert after["last_served"] > before["last_served"], "the final store flush did not run"
    assert "stopped" in s.logs()


def busy_store(dcserve_bin, tmp_path, count=20, size=1 << 20, small=0):
    """A site of `count` 1 MB files under one rule, each already stored as a dictionary, so a start
    precompresses count × 4 deltas per coding at the best level; plus `small` 2 KB files in the
    rule's scope, so the start-up walk starts a new SHA-256 every few microseconds."""
    site = tmp_path / "site"
    (site / "d").mkdir(parents=True)
    rng = random.Random(13)
    words = [bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(3000)]
    text = b" ".join(rng.choice(words) for _ in range((size + count * 1024) // 5 + 1024))
    for i in range(count):
        (site / "d" / f"{i}.bin").write_bytes(text[i * 1024:i * 1024 + size])
    for i in range(small):
        (site / "d" / f"s{i}.bin").write_bytes(bytes(rng.choice(words)) * (2048 // 3) + str(i).encode())
    args = ["--root", str(site), "--store", str(tmp_path / "store"), "--dictionaries", "/d/*.bin"]
    with DCServe(dcserve_bin, args) as s:
        for i in range(count):
            assert s.get(f"/d/{i}.bin")[0] == 200
    assert len(store_records.records(tmp_path / "store")) == count
    return args


def test_start_failure_with_a_busy_store_exits_cleanly(dcserve_bin, tmp_path):
    """A bad certificate with a non-empty store used to crash (exit 132/139) in 10 of 25
    runs; it must print the reason and exit 1 every time."""
    args = busy_store(dcserve_bin, tmp_path, small=3000)
    bad = tmp_path / "bad.pem"
    bad.write_text("-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n")
    runs = int(os.environ.get("DCSERVE_STARTUP_FAILURE_RUNS", "25"))
    started = time.monotonic()
    codes = []
    for _ in range(runs):
        p = run(dcserve_bin, "serve", "--port", "0", "--tls-port", "0", "--tls-cert", str(bad), "--tls-key", str(bad),
                *args, check=False, timeout=60)
        err = p.stderr.decode(errors="replace")
        codes.append(p.returncode)
        assert p.returncode == 1, f"run {len(codes)}: exit {p.returncode}: {err[-2000:]}"
        assert "cannot start the HTTPS listener" in err, err
        if time.monotonic() - started > 60:
            break
    assert codes == [1] * len(codes) and len(codes) >= 5


def test_sigterm_while_precompressing_exits_cleanly(dcserve_bin, tmp_path):
    """Shutdown stops background work first: a SIGTERM while start-up precompression is busy exits
    0 with the store intact."""
    args = busy_store(dcserve_bin, tmp_path, count=6, size=256 << 10)
    for _ in range(2):
        with DCServe(dcserve_bin, args) as s:
            assert s.get("/d/0.bin")[0] == 200
            assert s.stop() == 0, s.logs()
    assert len(store_records.records(tmp_path / "store")) == 6


def test_quick_mode_upstream_without_root(dcserve_bin, tmp_path):
    """`--upstream URL` needs no --root: every path is routed to the upstream (502 "no proxy" until a
    proxy is plugged in, or the proxy's answer); health still answers."""
    with DCServe(dcserve_bin, ["--upstream", "http://127.0.0.1:9", "--store", str(tmp_path / "store")], cwd=str(tmp_path)) as s:
        status, _, _ = s.get("/latest_news")
        assert status in (502, 503, 504)
        assert s.get("/healthz")[0] == 200
        assert "routes=/→upstream" in s.logs() or "/→upstream" in s.logs()


@pytest.mark.parametrize("url", ["ftp://127.0.0.1:21", "http://127.0.0.1:0", "http://127.0.0.1:80/api", "127.0.0.1:8000"])
def test_quick_mode_refuses_bad_upstream_url(dcserve_bin, tmp_path, url):
    err = refused(dcserve_bin, ["--upstream", url, "--store", str(tmp_path / "store")])
    assert "--upstream" in err


def test_upstream_with_root_is_refused(dcserve_bin, tmp_path):
    err = refused(dcserve_bin, ["--upstream", "http://127.0.0.1:9", "--root", str(tmp_path)])
    assert "--root" in err


def test_upstream_flag_replaces_the_files_routes(dcserve_bin, tmp_path):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({
        "site": {"root": str(ROOT / "examples/site")}, "store": {"path": str(tmp_path / "store")},
        "upstreams": {"names": ["api"], "api": {"servers": ["http://127.0.0.1:9"]}},
        "routes": {"names": ["static", "api"], "static": {"prefix": "/static/"}, "api": {"prefix": "/", "upstream": "api"}},
    }))
    with DCServe(dcserve_bin, ["--config", str(cfg)]) as s:
        assert s.get("/static/app.v1.js")[0] == 200  # the file's routes: /static/ from the site
        assert s.get("/other")[0] in (502, 503, 504)
    with DCServe(dcserve_bin, ["--config", str(cfg), "--upstream", "http://127.0.0.1:9"]) as s:
        assert s.get("/static/app.v1.js")[0] in (502, 503, 504)  # everything upstream now
        assert "routes=/→upstream " in s.logs()


def test_route_to_a_missing_upstream_is_refused(dcserve_bin, tmp_path):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"routes": {"names": ["api"], "api": {"prefix": "/api/", "upstream": "nope"}}}))
    err = refused(dcserve_bin, ["--config", str(cfg)])
    assert "invalid configuration: routes.api.upstream: no upstream named \"nope\"" in err, err


def raw_status(s: DCServe, target: str) -> int:
    sock = s.connect()
    sock.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    head = sock.recv(4096)
    sock.close()
    return int(head.split(b" ", 2)[1])


def test_routes_match_the_normalized_path(dcserve_bin, tmp_path):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({
        "site": {"root": str(ROOT / "examples/site")}, "store": {"path": str(tmp_path / "store")},
        "upstreams": {"names": ["api"], "api": {"servers": ["http://127.0.0.1:9"]}},
        "routes": {"names": ["static", "api"], "static": {"prefix": "/static/"}, "api": {"prefix": "/", "upstream": "api"}},
    }))
    with DCServe(dcserve_bin, ["--config", str(cfg)]) as s:
        assert raw_status(s, "/static/app.v1.js") == 200
        assert raw_status(s, "/%73tatic/app.v1.js") == 200
        assert raw_status(s, "/x/../static/app.v1.js") == 200
        assert raw_status(s, "/static/../x") in (502, 503, 504)
        assert raw_status(s, "/../static/app.v1.js") == 400


def test_admin_port_in_use_after_the_main_listener_opened_exits_cleanly(dcserve_bin, quick, tmp_path):
    """The admin listener fails after the main one opened: the main listener is closed again, the
    reason printed, exit 1 (no crash, no hang)."""
    with DCServe(dcserve_bin, quick) as first:
        p = run(dcserve_bin, "serve", "--port", "0", "--admin-port", str(first.admin_port), *quick[:2],
                "--store", str(tmp_path / "store2"), check=False, timeout=30)
        err = p.stderr.decode(errors="replace")
        assert p.returncode == 1, err
        assert f"cannot listen on 127.0.0.1:{first.admin_port}: port already in use" in err, err
        assert "listening on http://127.0.0.1:" in err  # the main listener had opened first
        assert first.get("/static/app.v1.js")[0] == 200


def test_example_proxy_configuration_serves_site_and_api(dcserve_bin, tmp_path):
    """Config/proxy.json with the example API on a free port: /api/ is proxied (and its list
    becomes a dictionary), everything else comes from examples/site."""
    from upstream_support import ExampleAPI
    with ExampleAPI() as api:
        env = {"DCSERVE_UPSTREAMS_API_SERVERS": api.base, "DCSERVE_STORE_PATH": str(tmp_path / "store"),
               "DCSERVE_ADMIN_ENABLED": "true"}  # the fixture waits for the admin listener
        with DCServe(dcserve_bin, ["--config", str(ROOT / "Config/proxy.json")], cwd=str(ROOT), env=env) as s:
            status, headers, body = s.get("/api/items")
            assert status == 200 and "1.1 dcserve" in headers.get("Via", "")
            assert 'match="/api/items*"' in headers.get("Use-As-Dictionary", "")
            status, _, body = s.get("/static/app.v1.js")
            assert status == 200 and body == V1


def test_quick_mode_upstream_proxies_the_example_api(dcserve_bin, tmp_path):
    from upstream_support import ExampleAPI
    with ExampleAPI() as api:
        with DCServe(dcserve_bin, ["--upstream", api.base, "--dictionaries", "/api/items*",
                                   "--store", str(tmp_path / "store")], cwd=str(tmp_path)) as s:
            status, headers, _ = s.get("/api/items")
            assert status == 200 and 'match="/api/items*"' in headers.get("Use-As-Dictionary", "")
            assert s.get("/api/items/2")[0] == 200


def test_quick_mode_never_invents_freshness_for_an_api(dcserve_bin, tmp_path):
    """/latest_news says `Cache-Control: no-cache`. By default quick mode keeps it and does not make the
    response a dictionary (a day of max-age would let browsers show yesterday's feed without asking);
    `--dictionary-lifetime` is the developer's explicit choice; a value that forbids use as a
    dictionary is refused naming the flag."""
    from upstream_support import ExampleAPI
    with ExampleAPI() as api:
        with DCServe(dcserve_bin, ["--upstream", api.base, "--dictionaries", "/latest_news", "--dictionaries", "/api/items*",
                                   "--store", str(tmp_path / "store")], cwd=str(tmp_path)) as s:
            status, headers, _ = s.get("/latest_news")
            assert status == 200 and headers["Cache-Control"] == "no-cache" and "Use-As-Dictionary" not in headers, dict(headers)
            # An API value that allows use as a dictionary is kept as it is.
            status, headers, _ = s.get("/api/items")
            assert headers["Cache-Control"] == "max-age=60" and headers["Use-As-Dictionary"] == 'match="/api/items*"'
        swr = "max-age=0, stale-while-revalidate=86400"
        with DCServe(dcserve_bin, ["--upstream", api.base, "--dictionaries", "/latest_news", "--dictionary-lifetime", swr,
                                   "--store", str(tmp_path / "store")], cwd=str(tmp_path)) as s:
            status, headers, _ = s.get("/latest_news")
            assert headers["Cache-Control"] == swr and headers["Use-As-Dictionary"] == 'match="/latest_news"', dict(headers)
    message = refused(dcserve_bin, ["--upstream", "http://127.0.0.1:9", "--dictionaries", "/x", "--dictionary-lifetime", "no-store"])
    assert "--dictionary-lifetime" in message and "does not let clients use the response as a dictionary" in message, message


def test_quick_mode_honours_the_environment(dcserve_bin, quick):
    """Quick mode reads DCSERVE_* like a file would (a container's image sets DCSERVE_SERVER_HOST=0.0.0.0
    and runs `serve --upstream …`): here the decision header, on by default in quick mode, is turned
    off and the preference changed; a flag still beats the environment; a bad value is refused naming
    the key."""
    headers = {"Accept-Encoding": "gzip, br"}
    with DCServe(dcserve_bin, quick) as s:
        status, h, _ = s.get("/static/app.v1.js", headers)
        assert status == 200 and h.get("DCServe-Decision") and h.get("Content-Encoding") == "br", dict(h)
    env = {"DCSERVE_SERVER_DECISION_HEADER": "false", "DCSERVE_COMPRESSION_PREFERENCE": "gzip,br"}
    with DCServe(dcserve_bin, quick, env=env) as s:
        status, h, _ = s.get("/static/app.v1.js", headers)
        assert status == 200 and h.get("DCServe-Decision") is None and h.get("Content-Encoding") == "gzip", dict(h)
    with DCServe(dcserve_bin, [*quick, "--decision-header"], env=env) as s:
        assert s.get("/static/app.v1.js", headers)[1].get("DCServe-Decision")
    err = refused(dcserve_bin, quick, env={"DCSERVE_SERVER_HEADER_TIMEOUT_SECONDS": "1e300"})
    assert "server.headerTimeoutSeconds" in err


def test_quick_mode_upstream_takes_its_environment_settings(dcserve_bin, tmp_path):
    """`serve --upstream URL` is the upstream named `upstream`: DCSERVE_UPSTREAMS_UPSTREAM_* set its
    settings as for a file's upstream (a read timeout of 1 s against an upstream that answers after
    4 s gives 504, the default 60 s would wait and relay a 200), and a variable of that prefix naming
    no upstream setting is refused, as a file's unknown key is."""
    from upstream_support import GarbageUpstream
    reply = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\nslow"
    args = ["--upstream", None, "--store", str(tmp_path / "store")]
    with GarbageUpstream(reply=reply, delay=4) as slow:
        args[1] = slow.base
        with DCServe(dcserve_bin, args, cwd=str(tmp_path)) as s:
            status, _, body = s.get("/x")
            assert status == 200 and body == b"slow"
        env = {"DCSERVE_UPSTREAMS_UPSTREAM_READ_TIMEOUT_SECONDS": "1"}
        with DCServe(dcserve_bin, args, cwd=str(tmp_path), env=env) as s:
            status, _, _ = s.get("/x")
            assert status == 504
    err = refused(dcserve_bin, ["--upstream", "http://127.0.0.1:9"], env={"DCSERVE_UPSTREAMS_UPSTREAM_READ_TIMEOUT": "3"})
    assert "DCSERVE_UPSTREAMS_UPSTREAM_READ_TIMEOUT" in err and "readTimeoutSeconds" in err, err
    err = refused(dcserve_bin, ["--upstream", "http://127.0.0.1:9"], env={"DCSERVE_UPSTREAMS_UPSTREAM_READ_TIMEOUT_SECONDS": "-1"})
    assert "upstreams.upstream.readTimeoutSeconds" in err, err
