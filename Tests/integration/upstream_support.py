"""Upstreams for proxy tests: the example API (examples/api, Starlette on uvicorn) and raw-socket
servers ("garbage", one answer per connection), each started on a free 127.0.0.1 port and stopped by PID.

    with ExampleAPI() as api:          # api.base == "http://127.0.0.1:PORT", api.connections()
        ...
    with GarbageUpstream(b"NOT HTTP\r\n\r\n") as g:   # answers every connection with those bytes
        ...
    with OneShotUpstream({b"/p": reply}) as u:        # one answer per connection, then closes
        ...
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from paths import ROOT
API_LISTEN_RE = re.compile(rb"example api listening on http://127\.0\.0\.1:(\d+)")


class ExampleAPI:
    """The example API as a child process (uvicorn, one worker)."""

    def __init__(self, port: int = 0, timeout: float = 20.0):
        """`port` 0 picks a free one (`port` attribute); a given port lets a test restart the API in place."""
        self.log_file = tempfile.NamedTemporaryFile(prefix="example-api-", suffix=".txt", delete=False)
        python = os.environ.get("DCSERVE_PYTHON", sys.executable)
        self.proc = subprocess.Popen([python, str(ROOT / "examples/api/serve.py"), "--port", str(port)],
                                     stdout=self.log_file, stderr=subprocess.STDOUT)
        self.port = None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = API_LISTEN_RE.search(open(self.log_file.name, "rb").read())
            if m:
                self.port = int(m.group(1))
                break
            if self.proc.poll() is not None:
                raise RuntimeError("example API exited:\n" + self.logs())
            time.sleep(0.05)
        if self.port is None:
            self.stop()
            raise RuntimeError("example API did not report its port:\n" + self.logs())
        # The socket is bound before the line is printed; wait until uvicorn answers.
        while time.monotonic() < deadline:
            try:
                self.connections()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("example API does not answer:\n" + self.logs())

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def logs(self) -> str:
        return open(self.log_file.name, "rb").read().decode(errors="replace")

    def connections(self) -> int:
        """TCP connections the API accepted so far (this call's own connection included)."""
        with urllib.request.urlopen(self.base + "/api/conn-count", timeout=10) as r:
            return json.loads(r.read())["accepted"]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if os.path.exists(self.log_file.name):
            os.unlink(self.log_file.name)

    def __enter__(self) -> "ExampleAPI":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class SocketUpstream:
    """A TCP server on 127.0.0.1 (a thread in this process) handing each accepted connection to
    `answer(conn)` (a subclass's), one at a time, then closing it. `accepted` counts connections."""

    def __init__(self):
        self.accepted = 0
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def answer(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            self.accepted += 1
            with conn:
                conn.settimeout(2)
                try:
                    self.answer(conn)
                except OSError:
                    pass

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(timeout=5)
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class GarbageUpstream(SocketUpstream):
    """Reads whatever arrives, answers every connection with `reply` (bytes that are not a valid HTTP
    response, after `delay` seconds) and closes it."""

    def __init__(self, reply: bytes = b"THIS IS NOT HTTP\r\n\r\n", delay: float = 0.0):
        self.reply = reply
        self.delay = delay
        super().__init__()

    def answer(self, conn: socket.socket) -> None:
        conn.recv(65536)
        if self.delay:
            time.sleep(self.delay)
        conn.sendall(self.reply)


class OneShotUpstream(SocketUpstream):
    """Answers one request per connection and closes it right after the answer, as some servers do
    without announcing `Connection: close`. The answer is `replies[path]`, else 200 with the request
    head as the body. `heads` records every request head received (bytes)."""

    def __init__(self, replies: dict[bytes, bytes] | None = None):
        self.replies = replies or {}
        self.heads: list[bytes] = []
        super().__init__()

    def answer(self, conn: socket.socket) -> None:
        buf = b""
        while b"\r\n\r\n" not in buf:
            data = conn.recv(65536)
            if not data:
                return
            buf += data
        head = buf.split(b"\r\n\r\n", 1)[0]
        self.heads.append(head)
        reply = self.replies.get(head.split(b" ")[1])
        if reply is None:
            body = head + b"\r\n\r\n"
            reply = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body
        conn.sendall(reply)


def free_port() -> int:
    """A port nothing listens on (bound and released: connecting to it is refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ScriptedUpstream:
    """An HTTP/1.1 server on 127.0.0.1 (threads in this process) whose answers a test scripts:
    `routes[path](request_headers) -> (status, [(name, value), ...], body)`; unknown paths get 404.
    `requests` records (method, path, headers) of every request. Keep-alive, Content-Length framing."""

    def __init__(self, routes: dict):
        import http.server

        self.routes = routes
        self.requests: list[tuple[str, str, dict]] = []
        upstream = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def answer(self):
                path = self.path.split("?", 1)[0]
                headers = {k: v for k, v in self.headers.items()}
                upstream.requests.append((self.command, path, headers))
                route = upstream.routes.get(path)
                status, fields, body = route(self.headers) if route else (404, [], b"not found")
                self.send_response(status)
                for name, value in fields:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_GET = do_HEAD = do_POST = answer

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
