"""dcserve as a reverse proxy in front of the example API (examples/api, Starlette on uvicorn),
tested through the release binary with clients dcserve did not write: curl, Python http.client and
raw sockets. After each test the proxy must still serve the next client (`assert_serves`).

The whole file runs in well under a minute: one example API and one dcserve for most tests; the
failure tests start their own short-lived dcserve.
"""
from __future__ import annotations

import gzip
import hashlib
import http.client
import json
import pathlib
import re
import socket
import subprocess
import tempfile
import time

import pytest

from dcserve_server import DCServe
from decoders import dcz_with_zstd_cli
from upstream_support import ExampleAPI, GarbageUpstream, OneShotUpstream, free_port


def proxy_config(tmp: pathlib.Path, upstream: str, **upstream_settings) -> str:
    """A configuration file: every path proxied to `upstream`; /api/items advertised as a dictionary
    for /api/*."""
    settings = {"servers": [upstream], "readTimeoutSeconds": 2, "connectTimeoutSeconds": 2}
    settings.update(upstream_settings)
    config = {
        "server": {"host": "127.0.0.1", "port": 0},
        "store": {"path": str(tmp / "store")},
        "site": {"root": str(tmp)},
        "compression": {"precompress": False},
        "upstreams": {"names": ["api"], "api": settings},
        "routes": {"names": ["api"], "api": {"prefix": "/", "upstream": "api"}},
        "dictionaries": {"rules": ["items"],
                         "items": {"match": "/api/*", "resources": "/api/items", "compress": ["/api/*"], "maxAge": 3600}},
    }
    path = tmp / "proxy.json"
    path.write_text(json.dumps(config))
    return str(path)


@pytest.fixture(scope="module")
def api():
    with ExampleAPI() as a:
        yield a


@pytest.fixture(scope="module")
def proxy(dcserve_bin, api, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("proxy")
    with DCServe(dcserve_bin, ["--config", proxy_config(tmp, api.base), "--event-loops", "2"]) as server:
        yield server


def request(port: int, method: str, path: str, headers: dict | None = None, body: bytes | None = None,
            timeout: float = 10) -> tuple[int, http.client.HTTPMessage, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        chunked = (headers or {}).get("Transfer-Encoding") == "chunked"
        conn.request(method, path, body=body, headers=headers or {}, encode_chunked=chunked)
        r = conn.getresponse()
        return r.status, r.headers, r.read()
    finally:
        conn.close()


def direct(api: ExampleAPI, path: str, headers: dict | None = None) -> bytes:
    return request(api.port, "GET", path, headers)[2]


def assert_serves(server: DCServe) -> None:
    """The proxy is alive and answers the next client."""
    assert server.alive(), server.logs()
    status, _, body = request(server.port, "GET", "/api/items")
    assert status == 200 and b'"items"' in body


def rss_kib(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


# --- ordinary traffic ---------------------------------------------------------------------------

def test_get_is_proxied_with_via(proxy, api):
    out = subprocess.run(["curl", "-s", "-i", f"{proxy.base}/api/items/7"], capture_output=True, timeout=30, check=True).stdout
    head, body = out.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200")
    assert re.search(rb"(?im)^via: 1\.1 dcserve\r?$", head), head
    assert body == direct(api, "/api/items/7")
    assert_serves(proxy)


def test_keep_alive_reuses_upstream_connections(proxy, api):
    for _ in range(3):
        request(proxy.port, "GET", "/api/items")  # warm the pools of both loops
    before = api.connections()
    for i in range(40):
        status, _, _ = request(proxy.port, "GET", f"/api/items/{i}")  # a new client connection each time
        assert status == 200
    after = api.connections()
    print(f"\n40 proxied requests on 40 client connections opened {after - before - 1} new upstream connections")
    # `after` counts its own connection; everything else must have come from the pools.
    assert after - before <= 3, f"{after - before} new upstream connections for 40 requests"
    assert_serves(proxy)


def test_proxied_exchanges_make_no_read_that_can_only_fail(proxy, api):
    """Sending the upstream request is not followed by a read of its socket before it signals input:
    that read can only return EAGAIN (one wasted system call per proxied request, ~1/3 of dcserve's
    reads on bench/proxy before the fix). strace counts the failed reads of 40 keep-alive exchanges."""
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    try:
        for _ in range(4):  # warm: both loops' pools hold a connection
            conn.request("GET", "/api/items")
            conn.getresponse().read()
        with tempfile.TemporaryDirectory() as tmp:
            out = pathlib.Path(tmp) / "reads.txt"
            trace = subprocess.Popen(["strace", "-f", "-qq", "-Z", "-e", "trace=read,recvfrom,recvmsg", "-o", str(out),
                                      "-p", str(proxy.proc.pid)])
            try:
                time.sleep(0.5)  # attached to every thread
                for i in range(40):
                    conn.request("GET", f"/api/items/{i}")
                    r = conn.getresponse()
                    assert r.status == 200 and r.read() == direct(api, f"/api/items/{i}")
                time.sleep(0.2)
            finally:
                trace.terminate()
                trace.wait(timeout=10)
            failed = [line for line in out.read_text().splitlines() if "EAGAIN" in line]
    finally:
        conn.close()
    print(f"\n40 proxied exchanges: {len(failed)} reads returned EAGAIN")
    assert len(failed) < 5, failed[:5]
    assert_serves(proxy)


def test_post_with_content_length_and_chunked_bodies(proxy):
    body = bytes(range(256)) * 200  # 51200 bytes, every byte value
    for headers, payload in [({"Content-Type": "application/octet-stream"}, body),
                             ({"Transfer-Encoding": "chunked"}, iter([body[:1000], body[1000:]]))]:
        status, _, answer = request(proxy.port, "POST", "/api/echo?x=1", headers, payload)
        assert status == 200
        echo = json.loads(answer)
        assert echo["method"] == "POST" and echo["query"] == "x=1"
        assert echo["body_length"] == len(body)
        assert echo["body_sha256"] == hashlib.sha256(body).hexdigest()
        names = [k for k, _ in echo["headers"]]
        # Streamed through: a known length stays a Content-Length, a chunked body stays chunked.
        framing = "transfer-encoding" if "Transfer-Encoding" in headers else "content-length"
        assert framing in names and ("content-length" in names) != ("transfer-encoding" in names), names
    assert_serves(proxy)


def test_sized_posts_keep_both_connections_alive(proxy, api):
    """POSTs with Content-Length, one client connection: the upstream may answer before the client's body
    stream reports its end; neither the client connection (no `Connection: close`) nor the upstream
    connection (pooled, not closed) is given up for that."""
    body = bytes(range(256)) * 100
    request(proxy.port, "GET", "/api/items")  # warm the pools
    before = api.connections()
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    try:
        for i in range(20):
            conn.request("POST", f"/api/echo?i={i}", body=body, headers={"Content-Type": "application/octet-stream"})
            r = conn.getresponse()
            answer = r.read()
            assert r.status == 200 and json.loads(answer)["body_length"] == len(body)
            assert (r.headers.get("Connection") or "").lower() != "close", f"request {i}: client connection closed"
            if i == 0:
                sock = conn.sock
            assert conn.sock is sock, f"request {i}: a new client connection"
    finally:
        conn.close()
    opened = api.connections() - before - 1  # minus the count request's own connection
    assert opened <= 2, f"{opened} new upstream connections for 20 POSTs on one client connection"
    assert_serves(proxy)


def test_large_post_bodies_are_streamed_to_the_upstream(proxy):
    # 6 MiB: over the server's 1 MiB buffered-body limit, so only a streamed body gets through.
    body = bytes(range(256)) * (6 << 12)
    for headers, payload in [({}, body), ({"Transfer-Encoding": "chunked"}, iter([body[i:i + 65536] for i in range(0, len(body), 65536)]))]:
        status, _, answer = request(proxy.port, "POST", "/api/echo", headers, payload, timeout=30)
        assert status == 200, answer[:200]
        echo = json.loads(answer)
        assert echo["body_length"] == len(body)
        assert echo["body_sha256"] == hashlib.sha256(body).hexdigest()
    assert_serves(proxy)


def test_client_abandoning_an_upload_mid_body(proxy):
    for _ in range(3):
        with proxy.connect() as s:
            s.sendall(b"POST /api/echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5000000\r\n\r\n" + b"x" * 100000)
            time.sleep(0.05)
    assert_serves(proxy)


def test_expect_100_continue(proxy):
    body = b"x" * 5000
    with proxy.connect() as s:
        s.sendall(b"POST /api/echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n")
        interim = s.recv(1024)
        assert interim.startswith(b"HTTP/1.1 100 Continue\r\n"), interim
        s.sendall(body)
        data = read_response(s)
    head, answer = data.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200"), head
    echo = json.loads(answer)
    assert echo["body_length"] == 5000
    assert "expect" not in [k for k, _ in echo["headers"]], "dcserve answered the expectation itself"
    assert_serves(proxy)


def read_response(s: socket.socket) -> bytes:
    """One response with a Content-Length body from a raw socket."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        assert chunk, data
        data += chunk
    length = int(re.search(rb"(?i)\r\ncontent-length: (\d+)", data).group(1))
    while len(data.split(b"\r\n\r\n", 1)[1]) < length:
        chunk = s.recv(65536)
        assert chunk, data
        data += chunk
    return data


def test_hop_by_hop_and_connection_listed_fields_are_removed(proxy, api):
    status, headers, _ = request(proxy.port, "GET", "/api/hop")
    assert status == 200
    for name in ["X-Private-Hop", "Keep-Alive", "Proxy-Authenticate", "Upgrade"]:
        assert headers.get(name) is None, f"{name} reached the client"
    assert headers.get("X-End-To-End") == "kept"
    # Request direction: the upstream sees none of the client's hop-by-hop fields.
    status, _, answer = request(proxy.port, "GET", "/api/echo", {
        "Connection": "X-Client-Hop", "X-Client-Hop": "secret", "Proxy-Authorization": "Basic eDp5",
        "TE": "trailers", "X-Forwarded-For": "192.0.2.7", "Available-Dictionary": ":AAAA:", "X-Kept": "yes"})
    seen = {k: v for k, v in json.loads(answer)["headers"]}
    for name in ["x-client-hop", "proxy-authorization", "te", "available-dictionary"]:
        assert name not in seen, f"{name} reached the upstream"
    assert seen["x-kept"] == "yes"
    assert seen["x-forwarded-for"] == "192.0.2.7, 127.0.0.1"
    assert seen["x-forwarded-proto"] == "http"
    assert seen["via"] == "1.1 dcserve"
    assert seen["host"] == f"127.0.0.1:{proxy.port}", "Host kept (the default policy)"
    assert_serves(proxy)


def test_no_transform_is_obeyed(proxy, api):
    original = direct(api, "/api/notransform")
    status, headers, body = request(proxy.port, "GET", "/api/notransform", {"Accept-Encoding": "gzip, br, zstd"})
    assert status == 200
    assert headers.get("Content-Encoding") is None
    assert body == original


def test_gzip_from_upstream_becomes_dcz_for_a_client_holding_a_dictionary(proxy, api):
    status, headers, dictionary = request(proxy.port, "GET", "/api/items")
    assert status == 200 and headers.get("Use-As-Dictionary"), dict(headers)
    identity = direct(api, "/api/gzip")  # what the upstream sends a client without gzip
    upstream_gz = request(api.port, "GET", "/api/gzip", {"Accept-Encoding": "gzip"})
    assert upstream_gz[1]["Content-Encoding"] == "gzip" and gzip.decompress(upstream_gz[2]) == identity
    available = ":" + __import__("base64").b64encode(hashlib.sha256(dictionary).digest()).decode() + ":"
    status, headers, body = request(proxy.port, "GET", "/api/gzip",
                                    {"Accept-Encoding": "gzip, dcz", "Available-Dictionary": available})
    assert status == 200
    assert headers["Content-Encoding"] == "dcz", dict(headers)
    assert dcz_with_zstd_cli(body, dictionary) == identity
    assert len(body) < len(upstream_gz[2]), f"dcz {len(body)} bytes vs upstream gzip {len(upstream_gz[2])}"
    # A client that takes only identity gets the decoded body.
    status, headers, body = request(proxy.port, "GET", "/api/gzip", {"Accept-Encoding": "identity"})
    assert headers.get("Content-Encoding") is None and body == identity


def test_two_users_with_the_same_head_get_their_own_bodies(proxy, api):
    users = ["Bearer alice", "Bearer bob"]
    expected = {u: direct(api, "/api/me", {"Authorization": u}) for u in users}
    assert expected[users[0]] != expected[users[1]] and len(expected[users[0]]) == len(expected[users[1]])
    for _ in range(4):
        for user in users:
            for accept in ["gzip", "identity"]:
                status, headers, body = request(proxy.port, "GET", "/api/me",
                                                {"Authorization": user, "Accept-Encoding": accept})
                assert status == 200 and headers["ETag"].removeprefix("W/").startswith('"me-v1')
                if headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                assert body == expected[user], f"{user} got another user's body"


# --- large bodies, slow and vanishing clients ----------------------------------------------------

def test_100_mb_to_a_slow_reader_keeps_memory_bounded(proxy):
    total = 100 << 20
    baseline = rss_kib(proxy.proc.pid)
    peak = baseline
    received = 0
    digest = hashlib.sha256()
    with proxy.connect(timeout=30) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 10)
        s.sendall(f"GET /api/big?bytes={total}&length=1 HTTP/1.1\r\nHost: t\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(4096)
        head, rest = head.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 200"), head
        chunked = re.search(rb"(?i)transfer-encoding: chunked", head) is not None
        raw = bytearray(rest)
        deadline = time.monotonic() + 40
        steps = 0
        while time.monotonic() < deadline:
            chunk = s.recv(256 << 10)
            if not chunk:
                break
            raw += chunk
            steps += 1
            if steps % 8 == 0:
                time.sleep(0.01)  # a slow reader (~30 MB/s): dcserve must pause the upstream, not buffer
                peak = max(peak, rss_kib(proxy.proc.pid))
            if raw.endswith(b"0\r\n\r\n") if chunked else len(raw) >= total:
                break
    body = dechunk(bytes(raw)) if chunked else bytes(raw)
    assert len(body) == total
    assert body[:65] == b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+/\n"
    growth_mib = (peak - baseline) / 1024
    print(f"\ndcserve RSS baseline {baseline // 1024} MiB, peak {peak // 1024} MiB during a 100 MiB slow read"
          f" ({time.monotonic() - (deadline - 40):.1f} s)")
    assert growth_mib < 48, f"RSS grew {growth_mib:.0f} MiB while relaying 100 MiB"
    assert_serves(proxy)


def test_large_streamed_body_is_compressed_on_the_fly(proxy):
    total = 20 << 20  # beyond the 8 MiB buffer: streamed
    status, headers, body = request(proxy.port, "GET", f"/api/big?bytes={total}&length=1", {"Accept-Encoding": "zstd"},
                                    timeout=30)
    assert status == 200 and headers["Content-Encoding"] == "zstd", dict(headers)
    assert "Accept-Encoding" in headers.get("Vary", "")
    decoded = subprocess.run(["zstd", "-q", "-d", "-c"], input=body, capture_output=True, check=True, timeout=30).stdout
    assert len(decoded) == total and len(body) < total // 20
    assert decoded[:65] == b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+/\n"
    # The identity representation of the same URL says it varies too (a cache must not hand it to a
    # client that accepts zstd, nor the zstd one to a client that does not).
    status, headers, body = request(proxy.port, "GET", f"/api/big?bytes={total}&length=1", {"Accept-Encoding": "identity"},
                                    timeout=30)
    assert status == 200 and "Content-Encoding" not in headers and len(body) == total
    assert "Accept-Encoding" in headers.get("Vary", ""), dict(headers)
    assert_serves(proxy)


def dechunk(data: bytes) -> bytes:
    out = bytearray()
    pos = 0
    while True:
        end = data.index(b"\r\n", pos)
        size = int(data[pos:end].split(b";")[0], 16)
        pos = end + 2
        if size == 0:
            return bytes(out)
        out += data[pos:pos + size]
        pos += size + 2


def test_client_disconnect_mid_response(proxy, api):
    for _ in range(3):
        with proxy.connect() as s:
            s.sendall(b"GET /api/big?bytes=300000000 HTTP/1.1\r\nHost: t\r\n\r\n")
            got = 0
            while got < (2 << 20):
                chunk = s.recv(65536)
                assert chunk
                got += len(chunk)
        # closed mid-body
    time.sleep(0.3)
    assert_serves(proxy)


# --- upstream failures ---------------------------------------------------------------------------

def test_upstream_closing_mid_body_truncates_not_hangs(proxy):
    # Larger than the buffer limit: streamed, so the client sees the cut (curl exit 18 = partial file).
    big = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{size_download}", "--max-time", "20",
                          f"{proxy.base}/api/truncate?bytes={20 << 20}"], capture_output=True, timeout=30)
    code, size = big.stdout.decode().split()
    assert big.returncode in (18, 56), (big.returncode, big.stdout)
    assert code == "200" and int(size) < (20 << 20)
    # Small and buffered: the cut is seen before the answer, which becomes 502.
    status, _, body = request(proxy.port, "GET", "/api/truncate?bytes=100000&chunked=1")
    assert status == 502, (status, body[:200])
    assert_serves(proxy)


def test_upstream_too_slow_is_504(proxy):
    start = time.monotonic()
    status, headers, body = request(proxy.port, "GET", "/api/slow?ms=6000")
    assert status == 504, body
    assert time.monotonic() - start < 5.5
    assert b"api" in body
    assert re.search(r"upstream=api .*upstream request failed", proxy.logs()), proxy.logs()[-2000:]
    assert_serves(proxy)


def test_upstream_down_is_502(dcserve_bin, tmp_path):
    with DCServe(dcserve_bin, ["--config", proxy_config(tmp_path, f"http://127.0.0.1:{free_port()}")]) as server:
        for _ in range(2):
            status, _, body = request(server.port, "GET", "/api/items")
            assert status == 502, body
        assert b"upstream api" in body
        assert re.search(r"upstream=api .*upstream request failed", server.logs())
        assert server.alive()


def test_upstream_garbage_is_502(dcserve_bin, tmp_path):
    with GarbageUpstream() as garbage, \
            DCServe(dcserve_bin, ["--config", proxy_config(tmp_path, garbage.base)]) as server:
        status, _, body = request(server.port, "GET", "/api/items")
        assert status == 502, body
        status, _, body = request(server.port, "POST", "/api/echo", body=b"abc")
        assert status == 502, body
        assert garbage.accepted >= 2
        assert server.alive()


def test_obs_text_in_field_values_passes_byte_for_byte(dcserve_bin, tmp_path):
    """Bytes ≥ 0x80 that are not UTF-8 (obs-text, RFC 9110 §5.5: opaque data) in a field value reach the
    upstream and the client exactly as sent; they became U+FFFD (EF BF BD) before."""
    reply = (b'HTTP/1.1 200 OK\r\nContent-Disposition: attachment; filename="caf\xe9.txt"\r\n'
             b"Content-Length: 2\r\n\r\nok")
    with OneShotUpstream({b"/file": reply}) as upstream, \
            DCServe(dcserve_bin, ["--config", proxy_config(tmp_path, upstream.base)]) as server:
        with server.connect() as s:
            s.sendall(b"GET /file HTTP/1.1\r\nHost: t\r\nX-Name: caf\xe9\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        assert data.startswith(b"HTTP/1.1 200") and b'filename="caf\xe9.txt"\r\n' in data, data
        assert any(b"X-Name: caf\xe9\r\n" in h for h in upstream.heads), upstream.heads


def test_via_names_the_protocol_the_response_came_with(dcserve_bin, tmp_path):
    """RFC 9110 §7.6.3: the received-protocol of a response the upstream sent as HTTP/1.0 is 1.0."""
    replies = {b"/old": b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
               b"/new": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"}
    with OneShotUpstream(replies) as upstream, \
            DCServe(dcserve_bin, ["--config", proxy_config(tmp_path, upstream.base)]) as server:
        for path, via in [("/old", "1.0 dcserve"), ("/new", "1.1 dcserve")]:
            status, headers, body = request(server.port, "GET", path)
            assert status == 200 and body == b"ok" and headers["Via"] == via, dict(headers)


def test_connection_the_upstream_closed_after_its_answer_is_not_reused(dcserve_bin, tmp_path):
    """An upstream that closes each connection right after its answer (no `Connection: close`): the
    pooled connection it closed is never handed to the next request, so a POST on the same client
    connection reaches the upstream (it cannot be replayed: on the dead connection it was a 502)."""
    with OneShotUpstream() as upstream, \
            DCServe(dcserve_bin, ["--config", proxy_config(tmp_path, upstream.base), "--event-loops", "1"]) as server:
        for i in range(3):
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
            try:
                conn.request("GET", f"/a{i}")
                r = conn.getresponse()
                assert r.status == 200 and r.read().startswith(b"GET /a")
                time.sleep(0.5)  # the upstream's FIN arrives meanwhile
                conn.request("POST", f"/b{i}", body=b"xy")
                r = conn.getresponse()
                body = r.read()
                assert r.status == 200, body
                assert body.startswith(f"POST /b{i} ".encode())
            finally:
                conn.close()
        assert [h.split(b" ")[1] for h in upstream.heads] == [b"/a0", b"/b0", b"/a1", b"/b1", b"/a2", b"/b2"]
        assert server.alive()


def test_requests_the_parser_rejects_never_reach_the_upstream(dcserve_bin, tmp_path):
    """An absolute-form target's authority stands in for Host and is checked like it (no userinfo, no
    empty host); a Content-Length that does not fit is not clamped: 400, nothing forwarded."""
    requests = [b'GET http://a"b<c>@x/p HTTP/1.1\r\nHost: ok.example\r\nConnection: close\r\n\r\n',
                b"GET http://user@ok.example/p HTTP/1.1\r\nHost: ok.example\r\nConnection: close\r\n\r\n",
                b"GET http:///p HTTP/1.1\r\nHost: ok.example\r\nConnection: close\r\n\r\n",
                b"POST /p HTTP/1.1\r\nHost: ok.example\r\nConnection: close\r\n"
                b"Content-Length: 99999999999999999999999\r\n\r\nxy"]
    with OneShotUpstream() as upstream, \
            DCServe(dcserve_bin, ["--config", proxy_config(tmp_path, upstream.base)]) as server:
        for raw in requests:
            with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
                s.sendall(raw)
                response = b""
                while chunk := s.recv(65536):
                    response += chunk
            assert response.startswith(b"HTTP/1.1 400 "), (raw, response)
        assert upstream.heads == []
        assert request(server.port, "GET", "http://ok.example/fine")[0] == 200
        assert upstream.heads[-1].startswith(b"GET /fine HTTP/1.1\r\n")
        assert b"\r\nHost: ok.example\r\n" in upstream.heads[-1] + b"\r\n"


def test_upstream_content_length_that_overflows_is_502(dcserve_bin, tmp_path):
    """The upstream's Content-Length does not fit in 64 bits: an invalid response, not a huge length."""
    reply = b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\nxy"
    with OneShotUpstream({b"/big": reply}) as upstream, \
            DCServe(dcserve_bin, ["--config", proxy_config(tmp_path, upstream.base)]) as server:
        status, headers, body = request(server.port, "GET", "/big")
        assert status == 502, body
        assert headers["Content-Length"] == str(len(body))
        assert server.alive()


def test_upstream_restart_is_transparent_for_gets(dcserve_bin, tmp_path):
    port = free_port()
    with ExampleAPI(port=port) as first, DCServe(dcserve_bin, ["--config", proxy_config(tmp_path, first.base),
                                                               "--event-loops", "1"]) as server:
        assert request(server.port, "GET", "/api/items")[0] == 200  # a pooled connection now
        first.stop()
        with ExampleAPI(port=port):
            # The pooled connection is dead; an idempotent request is retried on a new one.
            status, _, body = request(server.port, "GET", "/api/items")
            assert status == 200, body
        status, _, _ = request(server.port, "GET", "/api/items")
        assert status == 502
        assert server.alive()


def test_proxy_restart(dcserve_bin, api, tmp_path):
    config = proxy_config(tmp_path, api.base)
    for _ in range(2):
        with DCServe(dcserve_bin, ["--config", config]) as server:
            assert_serves(server)
