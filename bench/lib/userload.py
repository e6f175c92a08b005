"""Per-user live-version load for bench/memory and bench/scale: USERS users, each reading its own
document /latest_news/u<i>?v=<n>&n=<articles> from bench/live/feed_upstream.c through dcserve, rounds
v = 1..VERSIONS (every user once per round), each request naming the version the user holds
(Available-Dictionary = SHA-256 of the body it got last, which the upstream sends as Body-Sha256) with
its own partition key (Authorization: Bearer u<i>), over CONNECTIONS keep-alive connections (asyncio,
one request at a time per connection).

Verification (`verify(i)` true for that user): the body is decoded with an independent decoder (Python
zstandard for dcz/zstd with the held version as a raw-content dictionary, the brotli CLI for dcb/br, zlib
for gzip) and its SHA-256 compared with the upstream's Body-Sha256.
"""
from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import subprocess
import tempfile
import time
import zlib
from dataclasses import dataclass, field

import zstandard

BROTLI = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".deps/brotli/bin/brotli")
ACCEPT = "gzip, deflate, br, zstd, dcb, dcz"


@dataclass
class Tally:
    requests: int = 0
    returning: int = 0  # requests naming a version (round >= 2)
    deltas: int = 0  # dcb/dcz answers to returning requests
    advertised: int = 0  # responses carrying Use-As-Dictionary
    verified: int = 0
    errors: list[str] = field(default_factory=list)
    misses: dict[str, int] = field(default_factory=dict)  # why returning requests got no delta (DCServe-Decision)
    verified_bytes: int = 0  # identity bytes of the verified bodies (their mean sizes the new versions)
    held_hash: dict[int, str] = field(default_factory=dict)  # user -> Available-Dictionary of the version it holds
    held_body: dict[int, bytes] = field(default_factory=dict)  # verified users -> that version's bytes

    @property
    def new_version_bytes(self) -> float:
        """Identity bytes of the advertised versions (the new dictionaries), from the verified bodies' mean."""
        return self.advertised * self.verified_bytes / max(self.verified, 1)


def _brotli(data: bytes, dictionary: bytes | None) -> bytes:
    with tempfile.NamedTemporaryFile() as b, tempfile.NamedTemporaryFile() as d:
        b.write(data)
        b.flush()
        args = [BROTLI, "-d", "-c"]
        if dictionary is not None:
            d.write(dictionary)
            d.flush()
            args += ["-D", d.name]
        return subprocess.run(args + [b.name], capture_output=True, check=True).stdout


def decode(coding: str, body: bytes, held: bytes | None) -> bytes:
    if coding == "dcz":
        assert held is not None and body[8:40] == hashlib.sha256(held).digest(), "dcz header names another dictionary"
        d = zstandard.ZstdCompressionDict(held, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
        return zstandard.ZstdDecompressor(dict_data=d).decompress(body[40:], max_output_size=1 << 24)
    if coding == "dcb":
        assert held is not None and body[4:36] == hashlib.sha256(held).digest(), "dcb header names another dictionary"
        return _brotli(body[36:], held)
    if coding == "zstd":
        return zstandard.ZstdDecompressor().decompress(body, max_output_size=1 << 24)
    if coding == "br":
        return _brotli(body, None)
    if coding == "gzip":
        return zlib.decompress(body, 16 + zlib.MAX_WBITS)
    assert coding == "", f"unexpected coding {coding}"
    return body


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
    length = int(headers.get("content-length", "0"))
    body = await reader.readexactly(length) if length else b""
    return status, headers, body


async def run(port: int, users: int | list[int], versions: int, articles: int, connections: int,
              verify=lambda i: True, on_round=None, first_version: int = 1, tally: Tally | None = None) -> Tally:
    """Runs rounds `first_version`..`versions` for `users` (a count, or the user numbers); returns the
    tally (pass it back to continue with the versions its users hold). `on_round(v, seconds)` is called
    after each round."""
    tally = tally or Tally()
    held_hash, held_body = tally.held_hash, tally.held_body
    who = list(range(users)) if isinstance(users, int) else users

    async def worker(queue: asyncio.Queue, v: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while True:
                try:
                    i = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                u = i
                lines = [f"GET /latest_news/u{u}?v={v}&n={articles} HTTP/1.1", "Host: 127.0.0.1",
                         f"Authorization: Bearer u{u}", f"Accept-Encoding: {ACCEPT}"]
                named = held_hash.get(i)
                if named:
                    lines.append(f"Available-Dictionary: {named}")
                writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
                status, headers, body = await _read_response(reader)
                tally.requests += 1
                if status != 200:
                    tally.errors.append(f"u{u} v{v}: status {status}")
                    continue
                coding = headers.get("content-encoding", "")
                if named:
                    tally.returning += 1
                    if coding in ("dcz", "dcb"):
                        tally.deltas += 1
                    else:
                        why = headers.get("dcserve-decision", "?").split(" reason=")[-1].split(" ")[0]
                        tally.misses[why] = tally.misses.get(why, 0) + 1
                sha = headers.get("body-sha256")
                if verify(i):
                    try:
                        decoded = decode(coding, body, held_body.get(i))
                        if ":" + base64.b64encode(hashlib.sha256(decoded).digest()).decode() + ":" != sha:
                            raise AssertionError("decoded body differs from the upstream's (SHA-256)")
                        tally.verified += 1
                        tally.verified_bytes += len(decoded)
                        if "use-as-dictionary" in headers:
                            held_body[i] = decoded
                    except Exception as e:  # noqa: BLE001 - reported, counted as an error
                        tally.errors.append(f"u{u} v{v} {coding}: {e}")
                if "use-as-dictionary" in headers:
                    tally.advertised += 1
                    held_hash[i] = sha
                else:
                    held_hash.pop(i, None)
                    held_body.pop(i, None)
        finally:
            writer.close()

    for v in range(first_version, versions + 1):
        start = time.monotonic()
        queue: asyncio.Queue = asyncio.Queue()
        for i in who:
            queue.put_nowait(i)
        await asyncio.gather(*(worker(queue, v) for _ in range(min(connections, len(who)))))
        if on_round:
            on_round(v, time.monotonic() - start)
    return tally
