"""Helpers for HTTP integration tests: start `dcserve serve --root` through the shared `DCServe`
helper (127.0.0.1, port 0, stopped by PID) and build a document root with known files."""
import os
import pathlib
import socket

import pytest

from dcserve_server import DCServe


def start_server(dcserve_bin: str, root: pathlib.Path, log_dir: pathlib.Path, *extra: str) -> DCServe:
    """`dcserve serve --root ROOT` on a free port (the shared `DCServe` helper; `log_dir` is kept for
    the callers' signature, the log is a temporary file)."""
    try:
        return DCServe(dcserve_bin, ["--root", str(root), *extra], timeout=20)
    except RuntimeError as e:
        pytest.fail(f"dcserve did not start: {e}")


def make_docroot(root: pathlib.Path) -> dict:
    """A document root with known files; returns their contents."""
    files = {
        "index.html": b"<!doctype html><title>root</title>\n",
        "a.txt": b"file a\n",
        "b.txt": b"file b, longer\n",
        "style.css": b"body{color:red}\n",
        "data.json": b'{"x":1}\n',
        "1k.bin": os.urandom(1024),
        "sub/index.html": b"<p>sub</p>\n",
        "sub/deep/c.txt": b"deep c\n",
    }
    for name, data in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    big = root / "big.bin"
    with open(big, "wb") as f:
        block = os.urandom(1 << 20)
        for _ in range(64):
            f.write(block)
    (root / "inside-link").symlink_to("a.txt")
    outside = root.parent / "outside-secret.txt"
    outside.write_bytes(b"secret\n")
    (root / "outside-link").symlink_to(outside)
    (root / "outside-dir").symlink_to(root.parent)
    return files


def read_response(sock: socket.socket, buf: bytearray, head_only: bool = False):
    """Reads one HTTP/1.1 response from `sock` (leftover bytes stay in `buf`).
    Returns (status, headers dict lower-case → list, body bytes), or None on EOF before a response."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buf += chunk
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    del buf[:len(head) + 4]
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers: dict = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.setdefault(name.strip().lower(), []).append(value.strip())
    if head_only or status in (204, 304) or 100 <= status < 200:
        return status, headers, b""
    if "content-length" in headers:
        n = int(headers["content-length"][0])
        while len(buf) < n:
            chunk = sock.recv(65536)
            if not chunk:
                raise EOFError("connection closed inside a body")
            buf += chunk
        body = bytes(buf[:n])
        del buf[:n]
        return status, headers, body
    body = bytearray()  # close-delimited
    body += buf
    buf.clear()
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return status, headers, bytes(body)
        body += chunk


def is_closed(sock: socket.socket, timeout: float = 10) -> bool:
    """True when the peer closed the connection (EOF or reset) within `timeout`, discarding data."""
    sock.settimeout(timeout)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def get_ok(server: DCServe, path: str = "/a.txt") -> bytes:
    """A fresh client gets a 200: the server is still serving."""
    with server.connect() as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".encode())
        r = read_response(s, bytearray())
        assert r is not None and r[0] == 200, r
        return r[2]
