"""HTTP/1.1 server behaviour against the real binary, with curl, http.client and raw sockets.
After every hostile client, a fresh client must still be served."""
import http.client
import signal
import socket
import struct
import subprocess
import time

import pytest

from conftest import run
from http_support import get_ok, is_closed, make_docroot, read_response, start_server


@pytest.fixture(scope="module")
def docroot(tmp_path_factory):
    root = tmp_path_factory.mktemp("site") / "root"
    root.mkdir()
    return root, make_docroot(root)


@pytest.fixture(scope="module")
def server(dcserve_bin, docroot, tmp_path_factory):
    s = start_server(dcserve_bin, docroot[0], tmp_path_factory.mktemp("logs"),
                     "--header-timeout", "1", "--body-timeout", "1")
    yield s
    assert s.stop() == 0, s.log()


def test_curl_reuses_keep_alive_connection(server, docroot):
    r = run("curl", "-sv", f"{server.base}/a.txt", f"{server.base}/b.txt")
    assert r.stdout == docroot[1]["a.txt"] + docroot[1]["b.txt"]
    err = r.stderr.decode()
    assert "Re-using existing connection" in err or "Reusing existing connection" in err, err
    assert err.count("< HTTP/1.1 200 OK") == 2


def test_http_client_keep_alive_head_and_headers(server, docroot):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    for name in ["a.txt", "b.txt", "index.html"]:
        conn.request("GET", "/" + name)
        resp = conn.getresponse()
        assert resp.status == 200
        assert resp.read() == docroot[1][name]
        assert resp.getheader("Server") == "dcserve"
        assert resp.getheader("Date", "").endswith(" GMT")
    conn.request("HEAD", "/b.txt")
    resp = conn.getresponse()
    assert resp.status == 200
    assert resp.getheader("Content-Length") == str(len(docroot[1]["b.txt"]))
    assert resp.read() == b""
    conn.request("GET", "/a.txt")  # same connection still usable after HEAD
    assert conn.getresponse().read() == docroot[1]["a.txt"]
    conn.close()


def test_pipelined_requests_answered_in_order(server, docroot):
    names = ["a.txt", "b.txt", "style.css", "data.json", "sub/deep/c.txt"] * 20
    payload = "".join(f"GET /{n} HTTP/1.1\r\nHost: t\r\n\r\n" for n in names).encode()
    with server.connect() as s:
        s.sendall(payload)
        buf = bytearray()
        for n in names:
            status, _, body = read_response(s, buf)
            assert status == 200 and body == docroot[1][n]
        # The connection is still open for more.
        s.sendall(b"GET /a.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        status, headers, body = read_response(s, buf)
        assert status == 200 and headers["connection"] == ["close"]
        assert is_closed(s)


def test_http10_closes_unless_keep_alive_requested(server):
    with server.connect() as s:
        s.sendall(b"GET /a.txt HTTP/1.0\r\n\r\n")
        status, headers, _ = read_response(s, bytearray())
        assert status == 200 and headers.get("connection") == ["close"]
        assert is_closed(s)
    with server.connect() as s:
        buf = bytearray()
        s.sendall(b"GET /a.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        status, headers, _ = read_response(s, buf)
        assert status == 200 and headers.get("connection") == ["keep-alive"]
        s.sendall(b"GET /b.txt HTTP/1.0\r\n\r\n")
        assert read_response(s, buf)[0] == 200


def test_slowloris_is_disconnected(server):
    with server.connect() as s:
        request = b"GET /a.txt HTTP/1.1\r\nHost: t\r\nX-Slow: " + b"a" * 40
        s.settimeout(10)
        closed = False
        received = b""
        for byte in request:  # one byte every 0.1 s: the 1 s head timeout fires long before the end
            try:
                s.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            time.sleep(0.1)
        if not closed:
            s.settimeout(5)
            try:
                while chunk := s.recv(4096):
                    received += chunk
            except ConnectionResetError:
                pass
        assert closed or received.startswith(b"HTTP/1.1 408 ")
    get_ok(server)


def test_oversized_head_and_target(server):
    with server.connect() as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + b"b" * 20000 + b"\r\n\r\n")
        status, headers, body = read_response(s, bytearray())
        assert status == 431 and headers["connection"] == ["close"] and body
        assert is_closed(s)
    with server.connect() as s:
        s.sendall(b"GET /" + b"x" * 10000 + b" HTTP/1.1\r\nHost: t\r\n\r\n")
        status, headers, _ = read_response(s, bytearray())
        assert status == 414 and headers["connection"] == ["close"]
    with server.connect() as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(200)) + b"\r\n")
        assert read_response(s, bytearray())[0] == 431
    get_ok(server)


@pytest.mark.parametrize("request_bytes,status", [
    (b"POST /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 44\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n", 400),
    (b"POST /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n", 400),
    (b"POST /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n\r\n0\r\n\r\n", 400),
    (b"POST /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 400),
    (b"POST /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: -5\r\n\r\n", 400),
    (b"POST /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
    (b"GET /a.txt HTTP/1.1\r\nHost: t\r\nX: a\r\n b\r\n\r\n", 400),
    (b"GET /a.txt HTTP/1.1\r\nHost : t\r\n\r\n", 400),
    (b"GET /a.txt HTTP/1.1\r\n\r\n", 400),
    (b"GET /a.txt HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
    (b"GET /a.txt HTTP/2.0\r\nHost: t\r\n\r\n", 505),
    (b"CONNECT t:443 HTTP/1.1\r\nHost: t:443\r\n\r\n", 501),
    (b"POST /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999\r\n\r\n", 413),
    (b"GET /a.txt HTTP/1.1\nHost: t\n\n", 400),
])
def test_smuggling_and_malformed_requests_get_error_and_close(server, request_bytes, status):
    with server.connect() as s:
        s.sendall(request_bytes)
        buf = bytearray()
        got, headers, body = read_response(s, buf)
        assert got == status, body
        assert headers["connection"] == ["close"]
        assert body.strip()  # a short reason
        # Nothing after the error response (in particular no answer to a smuggled request).
        assert is_closed(s)
        assert not buf
    get_ok(server)


def test_abrupt_disconnect_mid_response(server):
    for _ in range(5):
        s = server.connect()
        s.sendall(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        assert s.recv(65536).startswith(b"HTTP/1.1 200 OK")
        # Reset instead of an orderly close, with most of the 64 MiB still unsent.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    for _ in range(3):
        s = server.connect()
        s.sendall(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        s.recv(1000)
        s.close()
    assert server.alive()
    get_ok(server)
    # A full large download still works and is byte-exact.
    r = run("curl", "-sS", "-o", "-", f"{server.base}/big.bin")
    assert len(r.stdout) == 64 << 20


def test_expect_100_continue(server):
    with server.connect() as s:
        s.sendall(b"POST /a.txt HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
        buf = bytearray()
        status, _, _ = read_response(s, buf)
        assert status == 100
        s.sendall(b"hello")
        status, headers, _ = read_response(s, buf)
        assert status == 405 and headers["allow"] == ["GET, HEAD"]


def test_chunked_request_body_is_read(server):
    with server.connect() as s:
        buf = bytearray()
        s.sendall(b"POST /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
                  b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n")
        assert read_response(s, buf)[0] == 405
        assert read_response(s, buf)[0] == 200  # framing was understood: the next request follows


def test_slow_body_times_out(server):
    with server.connect() as s:
        s.sendall(b"POST /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nabc")
        status, headers, _ = read_response(s, bytearray())
        assert status == 408 and headers["connection"] == ["close"]
    get_ok(server)


def test_access_log_lines(server):
    get_ok(server, "/b.txt")
    deadline = time.monotonic() + 5
    import re
    pattern = re.compile(r"dcserve\.access: .*GET /b\.txt 200 \d+B \d+\.\d{3}ms conn=\d+")
    while time.monotonic() < deadline and not pattern.search(server.log()):
        time.sleep(0.05)
    assert pattern.search(server.log()), server.log()[-2000:]


def test_max_connections_gets_503(dcserve_bin, docroot, tmp_path):
    s = start_server(dcserve_bin, docroot[0], tmp_path, "--max-connections", "2")
    try:
        held = [s.connect(), s.connect()]
        for h in held:  # make sure both are accepted and registered
            h.sendall(b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n")
            assert read_response(h, bytearray())[0] == 200
        with s.connect() as third:
            status, headers, _ = read_response(third, bytearray())
            assert status == 503 and headers["connection"] == ["close"]
        for h in held:
            h.close()
        deadline = time.monotonic() + 10
        while True:  # once the held ones are gone, new clients are served again
            try:
                get_ok(s)
                break
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    finally:
        assert s.stop() == 0


def test_graceful_shutdown_finishes_in_flight_and_closes_idle(dcserve_bin, docroot, tmp_path):
    s = start_server(dcserve_bin, docroot[0], tmp_path, "--shutdown-timeout", "20")
    idle = s.connect()
    idle.sendall(b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n")
    assert read_response(idle, bytearray())[0] == 200
    busy = s.connect()
    busy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    busy.sendall(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
    first = busy.recv(65536)
    assert first.startswith(b"HTTP/1.1 200 OK")
    s.proc.send_signal(signal.SIGTERM)
    assert is_closed(idle)  # idle keep-alive connection is closed promptly
    # The in-flight response still completes in full.
    buf = bytearray(first)
    busy.settimeout(20)
    while True:
        chunk = busy.recv(1 << 20)
        if not chunk:
            break
        buf += chunk
    head, _, body = bytes(buf).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK")
    assert len(body) == 64 << 20
    assert s.proc.wait(timeout=20) == 0
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", s.port), timeout=2)


def test_shutdown_deadline_forces_exit(dcserve_bin, docroot, tmp_path):
    s = start_server(dcserve_bin, docroot[0], tmp_path, "--shutdown-timeout", "1")
    stuck = s.connect()
    stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stuck.sendall(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
    stuck.recv(100)  # then never read again
    s.proc.send_signal(signal.SIGINT)
    assert s.proc.wait(timeout=15) == 0
    stuck.close()


def test_port_in_use_and_missing_root(dcserve_bin, docroot, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = run(dcserve_bin, "serve", "--root", str(docroot[0]), "--port", str(port), check=False, timeout=20)
        assert r.returncode != 0
        assert b"port already in use" in r.stderr, r.stderr
    r = run(dcserve_bin, "serve", "--root", str(tmp_path / "nope"), "--port", "0", check=False, timeout=20)
    assert r.returncode != 0
    assert b"document root" in r.stderr and b"nope" in r.stderr, r.stderr


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_pipelining_client_that_never_reads_is_bounded(server):
    """Back-pressure: a client that pipelines thousands of requests without reading responses does
    not make the server buffer without bound; once it reads, the responses flow again."""
    request = b"GET /1k.bin HTTP/1.1\r\nHost: t\r\n\r\n"
    with server.connect() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        s.setblocking(False)
        sent = 0
        stalls = 0
        # Kernel socket buffers on loopback can hold a few MB; 1M requests (38 MB) is far beyond them.
        while sent < 1_000_000 * len(request) and stalls < 100:
            try:
                sent += s.send(request * 500)
                stalls = 0
            except BlockingIOError:
                stalls += 1
                time.sleep(0.02)
        assert stalls >= 100, "the server kept accepting requests without anyone reading responses"
        assert rss_kib(server.proc.pid) < 200 * 1024
        s.setblocking(True)
        s.settimeout(10)
        buf = bytearray()
        for _ in range(100):
            status, _, body = read_response(s, buf)
            assert status == 200 and len(body) == 1024
    get_ok(server)


def test_ipv6_listener(dcserve_bin, docroot, tmp_path):
    import re
    log_path = tmp_path / "v6.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([dcserve_bin, "serve", "--root", str(docroot[0]), "--port", "0", "--host", "::1"],
                                stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        m = None
        while time.monotonic() < deadline and not m and proc.poll() is None:
            m = re.search(r"listening on http://\[::1\]:(\d+)", log_path.read_text())
            time.sleep(0.05)
        if not m:
            pytest.skip(f"no IPv6 loopback here: {log_path.read_text()}")
        r = run("curl", "-sg", f"http://[::1]:{m.group(1)}/a.txt")
        assert r.stdout == docroot[1]["a.txt"]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0


def test_access_log_keeps_every_line_in_order(dcserve_bin, docroot, tmp_path):
    """Several 64 KiB batches of access-log lines are written by the log writer's queue: after a
    graceful stop every request has exactly one line, in request order per connection."""
    import re
    s = start_server(dcserve_bin, docroot[0], tmp_path)
    per_connection = 1500
    conns = [s.connect() for _ in range(2)]
    for c in conns:
        for start in range(0, per_connection, 100):  # pipelined in bursts of 100
            c.sendall(b"".join(b"GET /a.txt?n=%d HTTP/1.1\r\nHost: t\r\n\r\n" % n
                               for n in range(start, start + 100)))
            buffer = bytearray()
            for _ in range(100):
                assert read_response(c, buffer)[0] == 200
    for c in conns:
        c.close()
    assert s.stop() == 0
    lines = re.findall(r"GET /a\.txt\?n=(\d+) 200 \d+B \d+\.\d{3}ms conn=(\d+)", s.log())
    by_conn: dict[str, list[int]] = {}
    for n, conn in lines:
        by_conn.setdefault(conn, []).append(int(n))
    assert sorted(len(v) for v in by_conn.values()) == [per_connection, per_connection], \
        {k: len(v) for k, v in by_conn.items()}
    for numbers in by_conn.values():
        assert numbers == list(range(per_connection))
