"""`dcserve fetch` against a raw socket server that answers malformed, truncated, hostile or randomly
mutated responses: every run ends with exit 0 (a usable response) or 1 with a message — never a
crash, a hang (bounded by --timeout and the subprocess timeout) or garbage written to -o."""
from __future__ import annotations

import random
import socket
import subprocess
import threading

import pytest

VALID = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nUse-As-Dictionary: match=\"/*\"\r\n"
         b"Cache-Control: max-age=60\r\nLink: </d>; rel=\"compression-dictionary\"\r\nContent-Length: 11\r\n\r\nhello world")

CANNED = [
    b"",
    b"garbage\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabc",
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nabcdef",
    b"HTTP/1.1 200 OK\r\nContent-Encoding: dcz\r\nContent-Length: 44\r\n\r\n" + bytes.fromhex("5e2a4d1820000000") + b"\x00" * 36,
    b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 5\r\n\r\nabcde",
    b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 3\r\n\r\n\xff\xff\xff",
    b"HTTP/1.1 200 OK\r\nContent-Encoding: compress\r\nContent-Length: 1\r\n\r\nx",
    b"HTTP/1.1 200 OK\r\nUse-As-Dictionary: ((((\r\nLink: <<<;;;,,,\r\nContent-Length: 1\r\n\r\nx",
    b"HTTP/1.1 200 OK\r\nUse-As-Dictionary: match=\"/(a)\"\r\nCache-Control: max-age=60\r\nContent-Length: 1\r\n\r\nx",
    b"HTTP/1.1 999 Nope\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    b"HTTP/1.1 200 OK\r\n folded: line\r\nContent-Length: 2\r\n\r\nok",
]


def mutations(count: int, seed: int = 9842):
    rng = random.Random(seed)
    for _ in range(count):
        data = bytearray(VALID)
        for _ in range(rng.randint(1, 6)):
            op = rng.randrange(3)
            i = rng.randrange(len(data))
            if op == 0:
                data[i] = rng.randrange(256)
            elif op == 1:
                del data[i:i + rng.randint(1, 8)]
            else:
                data[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        yield bytes(data)


class CannedServer:
    """Answers each connection with the next canned response, then closes. 127.0.0.1 only."""

    def __init__(self, responses: list[bytes]):
        self.responses = list(responses)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        for response in self.responses:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(10)
                try:
                    conn.recv(65536)
                    conn.sendall(response)
                except OSError:
                    pass

    def close(self):
        self.sock.close()
        self.thread.join(timeout=10)


@pytest.mark.parametrize("transport", ["eventloop", "socket"])
@pytest.mark.parametrize("batch", ["canned", "mutated"])
def test_fetch_survives_malformed_responses(dcserve_bin, tmp_path, batch, transport):
    responses = CANNED if batch == "canned" else list(mutations(25))
    server = CannedServer(responses)
    try:
        for i, response in enumerate(responses):
            out = tmp_path / f"out{i}"
            r = subprocess.run([dcserve_bin, "fetch", "--no-links", "--timeout", "5", "--transport", transport, "--store", str(tmp_path / "store"),
                                "-o", str(out), f"http://127.0.0.1:{server.port}/x"], capture_output=True, timeout=60)
            assert r.returncode in (0, 1), (response, r.returncode, r.stderr)
            if r.returncode == 1:
                assert r.stderr.strip(), response
                assert not out.exists(), response
    finally:
        server.close()
