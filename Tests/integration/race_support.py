"""Helpers for the static-file race tests: a process that swaps two directory entries with
renameat2(RENAME_EXCHANGE), a process that rewrites a file in place, and keep-alive GET loops in
worker processes. Every loop is bounded in count and time."""
from __future__ import annotations

import ctypes
import http.client
import os
import time

AT_FDCWD = -100
RENAME_EXCHANGE = 2


def swap_loop(a: str, b: str, seconds: float) -> int:
    """Exchanges `a` and `b` atomically until `seconds` have passed; returns the number of swaps."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    deadline = time.monotonic() + seconds
    swaps = 0
    ea, eb = os.fsencode(a), os.fsencode(b)
    while time.monotonic() < deadline:
        if libc.renameat2(AT_FDCWD, ea, AT_FDCWD, eb, RENAME_EXCHANGE) != 0:
            raise OSError(ctypes.get_errno(), "renameat2")
        swaps += 1
    return swaps


def rewrite_loop(path: str, versions: list[bytes], seconds: float) -> int:
    """Rewrites `path` in place (same inode: truncate, then write) cycling through `versions`."""
    deadline = time.monotonic() + seconds
    n = 0
    with open(path, "r+b", buffering=0) as f:
        while time.monotonic() < deadline:
            data = versions[n % len(versions)]
            f.seek(0)
            f.truncate(0)
            f.write(data)
            n += 1
    return n


def get_loop(port: int, path: str, count: int, seconds: float, headers: dict | None = None) -> dict:
    """Up to `count` GETs of `path` on keep-alive connections within `seconds`; returns
    {"statuses": {status: n}, "bodies": {body: n}} (bodies of 200 responses only)."""
    statuses: dict[int, int] = {}
    bodies: dict[bytes, int] = {}
    deadline = time.monotonic() + seconds
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    done = 0
    while done < count and time.monotonic() < deadline:
        try:
            conn.request("GET", path, headers=headers or {})
            r = conn.getresponse()
            body = r.read()
        except (OSError, http.client.HTTPException):
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            statuses[-1] = statuses.get(-1, 0) + 1
            done += 1
            continue
        statuses[r.status] = statuses.get(r.status, 0) + 1
        if r.status == 200:
            bodies[body] = bodies.get(body, 0) + 1
        if r.getheader("connection", "").lower() == "close":
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        done += 1
    conn.close()
    return {"statuses": statuses, "bodies": bodies}
