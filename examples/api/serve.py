"""Runs the example API (app.py) on uvicorn, counting accepted TCP connections.

    python examples/api/serve.py [--host 127.0.0.1] [--port 8000]

`--port 0` picks a free port. The line `example api listening on http://HOST:PORT` (stdout, flushed)
names the address once the socket is bound. /api/conn-count reports how many TCP connections the
server accepted so far (tests use it to see whether a proxy reuses its upstream connections).
"""
from __future__ import annotations

import argparse
import os
import socket
import sys

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import app as example_app  # noqa: E402


class CountingH11Protocol(H11Protocol):
    """uvicorn's h11 protocol plus a counter of accepted connections."""

    def connection_made(self, transport):  # type: ignore[override]
        example_app.CONNECTIONS["accepted"] += 1
        # h11 writes a response's head and body separately: without TCP_NODELAY the body waits for the
        # peer's delayed ACK (~40 ms per keep-alive request).
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        super().connection_made(transport)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args()

    sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(1024)
    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(example_app.app, http=CountingH11Protocol, log_level=args.log_level,
                            access_log=False, lifespan="off", timeout_keep_alive=60)
    server = uvicorn.Server(config)
    print(f"example api listening on http://{host}:{port}", flush=True)
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
