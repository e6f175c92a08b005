"""The admin listener answers only its own host names (DNS rebinding: a web page whose name resolves
to 127.0.0.1 must not read the metrics or the live view through the visitor's browser): `localhost`,
IP addresses and the names in `admin.allowedHosts` (`DCSERVE_ADMIN_ALLOWED_HOSTS`), any port; every
other `Host` gets 421. The health paths answer every `Host`, as on the public listener."""
from __future__ import annotations

import http.client

import pytest

from conftest import run
from dcserve_server import DCServe

from paths import ROOT


def admin_get(server: DCServe, path: str, host: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.admin_port, timeout=30)
    try:
        conn.putrequest("GET", path, skip_host=True)
        conn.putheader("Host", host)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@pytest.fixture
def quick(tmp_path):
    return ["--root", str(ROOT / "examples/site"), "--store", str(tmp_path / "store"), "--dictionaries", "/static/app.*.js"]


def test_admin_answers_loopback_names_and_addresses_only(dcserve_bin, quick):
    with DCServe(dcserve_bin, quick) as s:
        port = s.admin_port
        for host in ("localhost", f"localhost:{port}", f"127.0.0.1:{port}", "127.0.0.1", f"[::1]:{port}", "[::1]",
                     "LOCALHOST:1", "app.localhost", f"10.1.2.3:{port}"):
            for path in ("/metrics", "/dcserve/live.json", "/dcserve"):
                status, _ = admin_get(s, path, host)
                assert status == 200, (host, path, status)
        for host in ("evil.example", f"evil.example:{port}", "localhost.evil.example", "127.0.0.1.nip.io"):
            for path in ("/metrics", "/dcserve/live.json", "/dcserve"):
                status, body = admin_get(s, path, host)
                assert status == 421 and b"admin.allowedHosts" in body, (host, path, status, body)
            # Health probes answer any Host (they reveal nothing the public listener does not).
            assert admin_get(s, "/healthz", host)[0] == 200


def test_allowed_hosts_come_from_the_environment(dcserve_bin, quick):
    env = {"DCSERVE_ADMIN_ALLOWED_HOSTS": "dcserve,Metrics.Internal"}
    with DCServe(dcserve_bin, quick, env=env) as s:
        assert admin_get(s, "/metrics", "dcserve:9090")[0] == 200
        assert admin_get(s, "/dcserve/live.json", "metrics.internal")[0] == 200
        assert admin_get(s, "/metrics", "other.internal")[0] == 421
    with DCServe(dcserve_bin, quick, env={"DCSERVE_ADMIN_ALLOWED_HOSTS": "*"}) as s:
        assert admin_get(s, "/metrics", "anything.example")[0] == 200


def test_a_bad_allowed_host_is_refused(dcserve_bin, quick):
    r = run(dcserve_bin, "serve", "--port", "0", "--admin-port", "0", *quick, check=False, timeout=30,
            env={"PATH": "/usr/bin:/bin", "DCSERVE_ADMIN_ALLOWED_HOSTS": "evil.example:80"})
    assert r.returncode == 1 and b"admin.allowedHosts" in r.stderr, r.stderr
