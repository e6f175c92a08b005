"""dcserve behind a real shared cache (nginx `proxy_cache`), both ways:
- the cache ignores `Vary` and keys on the URL and `Accept-Encoding` (what several CDNs do), dcserve on
  its default `server.sharedCaches: ignoreVary`;
- the cache honours `Vary` (nginx's default), dcserve on `honourVary`.
Four kinds of client: two holding different dictionaries, one holding none, and a cross-site `cors`
request the RFC 9842 §9.3.3 gate refuses; the three offering a dictionary send the same `Accept-Encoding`. Every body each gets must
decode, with its own dictionary or none: 0 undecodable or foreign bodies.
"""
from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import random
import shutil
import subprocess
import tempfile
import time

import pytest

from dcserve_server import DCServe
from decoders import dcb_with_brotli_cli, dcz_with_zstd_cli, decode_plain
from upstream_support import ScriptedUpstream, free_port

# What Chromium sends: dcb and dcz only when it holds a dictionary for the URL.
AE = "gzip, deflate, br, zstd, dcb, dcz"
AE_WITHOUT_DICTIONARY = "gzip, deflate, br, zstd"


def body_of(name: str) -> bytes:
    """A feed of 60 stories with seeded random text (so br alone does not shrink it much); versions
    differ in their first stories only, as a news feed does."""
    rng = random.Random(7)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randrange(3, 9))) for _ in range(3000)]
    stories = [{"id": i, "title": " ".join(rng.sample(words, 6)), "text": " ".join(rng.sample(words, 40))} for i in range(60)]
    stories[0]["title"] = f"breaking: {name}"
    return json.dumps({"feed": stories}).encode()


VERSIONS = {"/api/news/1": body_of("one"), "/api/news/2": body_of("two"), "/api/news/current": body_of("current")}


def available(body: bytes) -> str:
    return ":" + base64.b64encode(hashlib.sha256(body).digest()).decode() + ":"


def get(port: int, path: str, headers: dict[str, str]):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers=headers)
        r = conn.getresponse()
        return r.status, r.headers, r.read()
    finally:
        conn.close()


class Nginx:
    """nginx from Debian's package as a caching reverse proxy in front of `backend` (one process, this
    user, its own prefix), stopped by PID."""

    def __init__(self, backend: int, ignore_vary: bool):
        self.prefix = tempfile.mkdtemp(prefix="shared-cache-nginx-")
        self.port = free_port()
        key = "$request_uri|$http_accept_encoding" if ignore_vary else "$request_uri"
        conf = os.path.join(self.prefix, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""
daemon off;
master_process off;
worker_processes 1;
error_log {self.prefix}/error.log;
pid {self.prefix}/nginx.pid;
events {{ worker_connections 64; }}
http {{
  access_log off;
  proxy_cache_path {self.prefix}/cache keys_zone=c:1m;
  proxy_temp_path {self.prefix}/temp;
  client_body_temp_path {self.prefix}/body;
  server {{
    listen 127.0.0.1:{self.port};
    location / {{
      proxy_pass http://127.0.0.1:{backend};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_cache c;
      proxy_cache_key "{key}";
      {"proxy_ignore_headers Vary;" if ignore_vary else ""}
      add_header X-Cache $upstream_cache_status;
    }}
  }}
}}
""")
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        self.proc = subprocess.Popen([binary, "-p", self.prefix, "-c", conf], stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while True:
            try:
                get(self.port, "/healthz-probe", {})
                break
            except OSError:
                assert time.monotonic() < deadline and self.proc.poll() is None, "nginx did not start"
                time.sleep(0.05)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)
        shutil.rmtree(self.prefix, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


CLIENTS = {
    "holds-one": {"Available-Dictionary": available(VERSIONS["/api/news/1"])},
    "holds-two": {"Available-Dictionary": available(VERSIONS["/api/news/2"])},
    "holds-none": {"Accept-Encoding": AE_WITHOUT_DICTIONARY},
    "cross-site": {"Available-Dictionary": available(VERSIONS["/api/news/1"]), "Sec-Fetch-Site": "cross-site",
                   "Sec-Fetch-Mode": "cors", "Origin": "https://elsewhere.example"},
}
HELD = {"holds-one": VERSIONS["/api/news/1"], "holds-two": VERSIONS["/api/news/2"], "cross-site": VERSIONS["/api/news/1"]}


@pytest.mark.parametrize("mode", ["ignoreVary", "honourVary"])
def test_no_client_gets_another_clients_bytes_through_a_shared_cache(dcserve_bin, brotli_cli, tmp_path, mode):
    routes = {path: (lambda body: lambda h: (200, [("Content-Type", "application/json"),
                                                   ("Cache-Control", "max-age=60")], body))(body)
              for path, body in VERSIONS.items()}
    env = {**os.environ, "DCSERVE_SERVER_SHARED_CACHES": mode}
    with ScriptedUpstream(routes) as up, \
            DCServe(dcserve_bin, ["--upstream", up.base, "--store", str(tmp_path / "store"),
                                  "--dictionaries", "/api/news/*"], env=env) as server, \
            Nginx(server.port, ignore_vary=(mode == "ignoreVary")) as cache:
        # Each dictionary is fetched once (directly: they are not what this test is about).
        for path in ("/api/news/1", "/api/news/2"):
            status, headers, _ = get(server.port, path, {"Accept-Encoding": "identity"})
            assert status == 200 and "Use-As-Dictionary" in headers
        time.sleep(0.3)
        wrong, deltas, hits, seen = [], 0, 0, []
        for round_ in range(3):
            for name, extra in CLIENTS.items():
                status, headers, body = get(cache.port, "/api/news/current", {"Accept-Encoding": AE, **extra})
                assert status == 200
                hits += headers.get("X-Cache") == "HIT"
                coding = headers.get("Content-Encoding") or ""
                seen.append((round_, name, coding, headers.get("X-Cache")))
                try:
                    if coding in ("dcz", "dcb"):
                        deltas += 1
                        assert name in HELD and name != "cross-site", "a delta for a client that may not have one"
                        # Both check that the header names the client's own dictionary.
                        decoded = dcz_with_zstd_cli(body, HELD[name]) if coding == "dcz" \
                            else dcb_with_brotli_cli(body, HELD[name], brotli_cli)
                    else:
                        decoded = decode_plain(body, coding, brotli_cli)
                    assert decoded == VERSIONS["/api/news/current"]
                except (AssertionError, subprocess.CalledProcessError) as e:
                    wrong.append((round_, name, coding, headers.get("X-Cache"), str(e)[:200]))
        assert wrong == [], wrong
        assert deltas >= 6, seen  # the two dictionary holders got deltas each round
        if mode == "honourVary":
            assert hits > 0  # the cache still does its work when it honours Vary
