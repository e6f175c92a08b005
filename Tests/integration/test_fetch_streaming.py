"""`dcserve fetch` streams a body to its output: a 300 MB response (identity with Content-Length,
gzip chunked) passes through with a peak RSS far below its size, for both transports, and the bytes
written are the bytes sent. The peak is measured by a small Python parent whose only child is the
fetch (RUSAGE_CHILDREN's ru_maxrss), so no other process of the test run counts."""
from __future__ import annotations

import hashlib
import json
import socket
import subprocess
import sys
import threading
import zlib

import pytest

MB = 1 << 20
PIECE = b"".join(b"%08d streamed line of a large response body\n" % i for i in range(MB // 32))[:MB]
assert len(PIECE) == MB
BIG_MB = 300
GZIP_MB = 120
RSS_LIMIT_KB = 100 * 1024


class BigBodyServer:
    """Answers GET /identity with BIG_MB MiB (Content-Length) and GET /gzip with GZIP_MB MiB gzipped
    and chunked, generated while sending. 127.0.0.1 only; one connection at a time."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.sock.settimeout(0.5)
        self.port = self.sock.getsockname()[1]
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                try:
                    head = b""
                    while b"\r\n\r\n" not in head:
                        data = conn.recv(65536)
                        if not data:
                            break
                        head += data
                    path = head.split(b" ")[1] if head else b""
                    if path == b"/identity":
                        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % (BIG_MB * MB))
                        for _ in range(BIG_MB):
                            conn.sendall(PIECE)
                    elif path == b"/gzip":
                        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n")
                        z = zlib.compressobj(1, zlib.DEFLATED, 31)
                        for _ in range(GZIP_MB):
                            self.chunk(conn, z.compress(PIECE))
                        self.chunk(conn, z.flush())
                        conn.sendall(b"0\r\n\r\n")
                except OSError:
                    pass

    @staticmethod
    def chunk(conn, data: bytes):
        if data:
            conn.sendall(b"%x\r\n" % len(data) + data + b"\r\n")

    def close(self):
        self.stopped.set()
        self.thread.join(timeout=10)
        self.sock.close()


@pytest.fixture(scope="module")
def big_server():
    server = BigBodyServer()
    yield server
    server.close()


def fetch_measured(argv: list[str]) -> tuple[subprocess.CompletedProcess, int]:
    """Runs argv under a fresh Python parent; returns the result and the child's peak RSS in KiB."""
    wrapper = ("import resource, subprocess, sys\n"
               "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
               "sys.stderr.buffer.write(r.stderr)\n"
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
               "sys.exit(r.returncode)\n")
    r = subprocess.run([sys.executable, "-c", wrapper, *argv], capture_output=True, timeout=600)
    return r, int(r.stdout.split()[-1])


def expected_digest(megabytes: int) -> str:
    h = hashlib.sha256()
    for _ in range(megabytes):
        h.update(PIECE)
    return h.hexdigest()


@pytest.mark.parametrize("transport", ["eventloop", "socket"])
@pytest.mark.parametrize("path,megabytes", [("/identity", BIG_MB), ("/gzip", GZIP_MB)])
def test_a_large_body_is_streamed_to_the_output(dcserve_bin, big_server, tmp_path, transport, path, megabytes):
    out = tmp_path / "body"
    url = f"http://127.0.0.1:{big_server.port}{path}"
    r, peak_kb = fetch_measured([dcserve_bin, "fetch", "--no-links", "--transport", transport, "--store",
                                 str(tmp_path / "store"), "-o", str(out), url])
    assert r.returncode == 0, r.stderr
    assert out.stat().st_size == megabytes * MB
    digest = hashlib.sha256()
    with open(out, "rb") as f:
        while block := f.read(8 * MB):
            digest.update(block)
    assert digest.hexdigest() == expected_digest(megabytes)
    out.unlink()
    print(f"fetch {path} {megabytes} MiB over {transport}: peak RSS {peak_kb // 1024} MiB")
    assert peak_kb < RSS_LIMIT_KB, f"peak RSS {peak_kb} KiB for a {megabytes} MiB body"


def test_json_report_of_a_large_body_hashes_what_was_streamed(dcserve_bin, big_server, tmp_path):
    """--json without -o: the body is only hashed (not kept), the report names its size and SHA-256."""
    url = f"http://127.0.0.1:{big_server.port}/identity"
    r = subprocess.run([dcserve_bin, "fetch", "--no-links", "--json", "--store", str(tmp_path / "store"), url],
                       capture_output=True, timeout=600)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["main"]["decodedBytes"] == BIG_MB * MB
    assert report["main"]["bodySHA256"] == expected_digest(BIG_MB)
