"""Helpers for the `DCServe-Decision` tests: one request over http.client (no automatic
decompression), a site with files for each decision, and the `Available-Dictionary` value of bytes."""
from __future__ import annotations

import base64
import hashlib
import http.client
import pathlib
import random
import time

from paths import ROOT
V1 = (ROOT / "examples/site/static/app.v1.js").read_bytes()
V2 = (ROOT / "examples/site/static/app.v2.js").read_bytes()
PAGE = ("".join(f"<p>paragraph {i}: nothing about dictionaries here</p>\n" for i in range(200))).encode()
LIB = b"".join(b"export function helper%d(x) { return x * %d; }\n" % (i, i) for i in range(100))
# Incompressible (seeded random bytes, application/octet-stream): every coding comes out larger.
NOISE = random.Random(35).randbytes(1024)


def available(data: bytes) -> str:
    return ":" + base64.b64encode(hashlib.sha256(data).digest()).decode() + ":"


def hash16(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def make_site(root: pathlib.Path) -> pathlib.Path:
    (root / "static").mkdir(parents=True)
    (root / "lib").mkdir()
    (root / "static/app.v1.js").write_bytes(V1)
    (root / "static/app.v2.js").write_bytes(V2)
    (root / "lib/util.js").write_bytes(LIB)
    (root / "page.html").write_bytes(PAGE)
    (root / "tiny.txt").write_bytes(b"tiny\n")
    (root / "noise.bin").write_bytes(NOISE)
    (root / "static/app.noise.js").write_bytes(NOISE)  # in the dictionary rule's scope, sharing nothing with V1
    (root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    return root


def request(port: int, path: str, headers: dict[str, str] | None = None, method: str = "GET"):
    """(status, headers as a case-insensitive message, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, headers=headers or {})
        r = conn.getresponse()
        return r.status, r.headers, r.read()
    finally:
        conn.close()


def wait_for_log(server, needle: str, timeout: float = 5.0) -> str:
    """The server's log once it contains `needle` (the access log is written in batches)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = server.logs()
        if needle in text:
            return text
        time.sleep(0.05)
    raise AssertionError(f"{needle!r} not in the log:\n{server.logs()[-3000:]}")
