"""Clients that request a large file inside a dictionary rule's scope and never read.

Every such connection must not cost a copy of the body: identity is sent from the file itself
(sendfile), encoded variants from the one cached array every connection shares. The test opens
N stalled connections per coding against the real binary and bounds dcserve's RSS growth; a
per-connection copy (as before the fix) costs N x the file size. Bounded: fixed counts, socket
timeouts, the server stopped by PID.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import time

from dcserve_server import DCServe
from decoders import dcz_with_python_zstandard

MB = 1 << 20
FILE_MB = 16
CLIENTS = 15  # per coding


def rss_bytes(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def stalled_request(port: int, path: str, headers: dict[str, str]) -> socket.socket:
    """A connection that sends one GET and does not read (a 4 KiB receive buffer)."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(30)
    s.connect(("127.0.0.1", port))
    fields = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: t\r\n{fields}\r\n".encode())
    return s


def read_response(s: socket.socket) -> tuple[bytes, bytes]:
    """Reads one Content-Length response from `s`: (head, body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        assert chunk, "connection closed before the head"
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = next(int(l.split(b":", 1)[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:"))
    while len(body) < length:
        chunk = s.recv(1 << 20)
        assert chunk, "connection closed mid-body"
        body += chunk
    return head, body


def test_never_reading_clients_of_a_large_in_scope_file_share_one_body(dcserve_bin, tmp_path):
    root = tmp_path / "www"
    (root / "big").mkdir(parents=True)
    rng = os.urandom(MB)
    data = b"".join(rng[:-8] + i.to_bytes(8, "big") for i in range(FILE_MB))  # incompressible
    other = b"".join(rng[:-8] + (i + 1000).to_bytes(8, "big") for i in range(FILE_MB))
    (root / "big" / "data.bin").write_bytes(data)
    (root / "big" / "other.bin").write_bytes(other)
    config = tmp_path / "dcserve.json"
    config.write_text(json.dumps({"compression": {
        # Variant cache 48 MiB, so the resource cache gets 24 MiB and keeps bytes up to 6 MiB: a 16 MiB
        # file is larger than that, as a 40 MB file is with the defaults. The variants fit.
        "variantCacheBytes": 48 * MB,
        "precompress": False,
        # No background best-level encodes of 16 MiB (they would run for minutes and add their memory).
        "levels": {"br": {"fast": 1, "best": 1}, "dcz": {"fast": 1, "best": 1}},
    }}))
    server = DCServe(dcserve_bin, ["--config", str(config), "--root", str(root), "--dictionaries", "/big/*",
                                   "--store", str(tmp_path / "store"), "--no-access-log"])
    sockets: list[socket.socket] = []
    try:
        available = ":" + base64.b64encode(hashlib.sha256(data).digest()).decode() + ":"
        kinds = {
            "identity": ("/big/data.bin", {"Accept-Encoding": "identity"}),
            # The body is incompressible: a br variant is sent only to a client that refuses identity.
            "br": ("/big/data.bin", {"Accept-Encoding": "br, identity;q=0"}),
            "dcz": ("/big/other.bin", {"Accept-Encoding": "dcz", "Available-Dictionary": available}),
        }
        # Warm up: the dictionary is stored, the digest remembered, each variant encoded once.
        for _ in range(2):
            status, h, body = server.get("/big/data.bin", {"Accept-Encoding": "identity"})
            assert status == 200 and body == data and "Use-As-Dictionary" in h
        for kind in ("br", "dcz"):
            path, fields = kinds[kind]
            status, h, body = server.get(path, fields)
            assert status == 200 and h["Content-Encoding"] == kind, (kind, h)
        status, h, body = server.get(*kinds["dcz"])
        assert dcz_with_python_zstandard(body, data) == other
        time.sleep(1)
        before = rss_bytes(server.proc.pid)

        for kind, (path, fields) in kinds.items():
            for _ in range(CLIENTS):
                sockets.append(stalled_request(server.port, path, fields))
        time.sleep(4)  # every request answered and its socket full
        grown = rss_bytes(server.proc.pid) - before
        copies = grown / (FILE_MB * MB)
        print(f"{len(sockets)} never-reading clients of {FILE_MB} MiB in-scope files: RSS +{grown / MB:.1f} MiB "
              f"({copies:.2f} body copies)")
        # Shared bodies: a few MiB of bookkeeping. One copy per identity connection alone would be 15 copies.
        assert grown < 2 * FILE_MB * MB, f"RSS grew {grown / MB:.0f} MiB with {len(sockets)} stalled clients"

        # The stalled responses are whole and right once read.
        head, body = read_response(sockets[0])
        assert head.startswith(b"HTTP/1.1 200") and hashlib.sha256(body).digest() == hashlib.sha256(data).digest()
        head, body = read_response(sockets[2 * CLIENTS])
        assert b"dcz" in head.lower() and dcz_with_python_zstandard(body, data) == other
        assert server.alive()
    finally:
        for s in sockets:
            s.close()
        server.stop()
