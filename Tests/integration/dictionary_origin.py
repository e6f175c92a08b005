"""A small RFC 9842 origin written with the Python standard library, PyPI `zstandard` and the brotli
CLI (`-D`, raw dictionary) — it shares no code with dcserve. `dcserve fetch` is checked against it.

Paths:
- `/dict.txt`: the dictionary, with `Use-As-Dictionary: match="/data/*", id="py-dict"` and
  `Cache-Control: max-age=3600`.
- `/data/<name>`: the payload; dcz (zstandard, raw-content dictionary) or dcb (brotli CLI) when the
  request's Available-Dictionary names the dictionary and Accept-Encoding lists the coding; otherwise
  identity. `coding` selects which one the server prefers ("dcz" or "dcb").
- `mode = "wrong-hash"`: the dcz/dcb header names another dictionary (the body is still compressed with
  the real one) — a client must drop the response.
- `mode = "corrupt"`: the compressed bytes after the header are damaged.
- `/page`: `Link: </dict.txt>; rel="compression-dictionary"` (out-of-band dictionary).

Listens on 127.0.0.1 only; `stop()` shuts it down. Every request's headers are kept in `requests`.
"""
from __future__ import annotations

import base64
import hashlib
import http.server
import os
import subprocess
import tempfile
import threading

import zstandard

DCZ_MAGIC = bytes.fromhex("5e2a4d1820000000")
DCB_MAGIC = bytes.fromhex("ff444342")


def sf_binary(data: bytes) -> str:
    return ":" + base64.b64encode(hashlib.sha256(data).digest()).decode() + ":"


def dcz_encode(payload: bytes, dictionary: bytes) -> bytes:
    zdict = zstandard.ZstdCompressionDict(dictionary, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
    frame = zstandard.ZstdCompressor(level=10, dict_data=zdict, write_checksum=True).compress(payload)
    return DCZ_MAGIC + hashlib.sha256(dictionary).digest() + frame


def dcb_encode(payload: bytes, dictionary: bytes, brotli_cli: str) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        dict_path, in_path = os.path.join(d, "dict"), os.path.join(d, "in")
        open(dict_path, "wb").write(dictionary)
        open(in_path, "wb").write(payload)
        out = subprocess.run([brotli_cli, "-c", "-q", "5", "-w", "22", "-D", dict_path, in_path],
                             capture_output=True, check=True, timeout=60).stdout
    return DCB_MAGIC + hashlib.sha256(dictionary).digest() + out


class DictionaryOrigin:
    def __init__(self, dictionary: bytes, payloads: dict[str, bytes], brotli_cli: str,
                 coding: str = "dcz", mode: str = "ok"):
        self.dictionary, self.payloads, self.brotli_cli = dictionary, payloads, brotli_cli
        self.coding, self.mode = coding, mode
        self.requests: list[tuple[str, dict[str, str]]] = []
        origin = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                headers = {k.lower(): v for k, v in self.headers.items()}
                origin.requests.append((self.path, headers))
                status, fields, body = origin.respond(self.path, headers)
                self.send_response(status)
                for k, v in fields:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def respond(self, path: str, headers: dict[str, str]):
        if path == "/dict.txt":
            return 200, [("Use-As-Dictionary", 'match="/data/*", id="py-dict"'),
                         ("Cache-Control", "max-age=3600"), ("Content-Type", "text/plain")], self.dictionary
        if path == "/page":
            return 200, [("Link", '</dict.txt>; rel="compression-dictionary"'), ("Cache-Control", "no-store")], b"page\n"
        name = path.removeprefix("/data/")
        if not path.startswith("/data/") or name not in self.payloads:
            return 404, [], b"not found\n"
        payload = self.payloads[name]
        codings = [t.strip().split(";")[0] for t in headers.get("accept-encoding", "").split(",")]
        if headers.get("available-dictionary") != sf_binary(self.dictionary) or self.coding not in codings:
            return 200, [("Vary", "Accept-Encoding, Available-Dictionary")], payload
        body = (dcz_encode(payload, self.dictionary) if self.coding == "dcz"
                else dcb_encode(payload, self.dictionary, self.brotli_cli))
        header_len = 40 if self.coding == "dcz" else 36
        if self.mode == "wrong-hash":
            body = body[:header_len - 32] + hashlib.sha256(b"some other dictionary").digest() + body[header_len:]
        elif self.mode == "corrupt":
            damaged = bytearray(body)
            for i in range(header_len + 4, min(len(damaged), header_len + 24)):
                damaged[i] ^= 0xA5
            body = bytes(damaged)
        return 200, [("Content-Encoding", self.coding), ("Vary", "Accept-Encoding, Available-Dictionary")], body

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
