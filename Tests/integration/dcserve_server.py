"""Starts the real `dcserve serve` binary for a test and stops it by PID.

The server binds 127.0.0.1 on a free port (`--port 0`) and logs the address it listens on; the
fixture reads that line from stderr. Logs are kept in a file so a failing test can show them.
"""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

LISTEN_RE = re.compile(rb"(?<!admin )listening on http://127\.0\.0\.1:(\d+)")
ADMIN_RE = re.compile(rb"admin listening on http://127\.0\.0\.1:(\d+)")
TLS_LISTEN_RE = re.compile(rb"listening on https://127\.0\.0\.1:(\d+)")


class DCServe:
    def __init__(self, binary: str, args: list[str], cwd: str | None = None,
                 env: dict[str, str] | None = None, timeout: float = 30.0, tls: bool = False):
        """`tls=True`: also wait for the HTTPS listener's log line; its port is `tls_port`."""
        self.log_file = tempfile.NamedTemporaryFile(prefix="dcserve-log-", suffix=".txt", delete=False)
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.proc = subprocess.Popen([binary, "serve", "--port", "0", "--admin-port", "0", *args], cwd=cwd, env=full_env,
                                     stdout=self.log_file, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        self.port = None
        self.tls_port = None
        while time.monotonic() < deadline:
            text = open(self.log_file.name, "rb").read()
            m, admin, m_tls = LISTEN_RE.search(text), ADMIN_RE.search(text), TLS_LISTEN_RE.search(text)
            if m and admin and (m_tls or not tls):
                self.port, self.admin_port = int(m.group(1)), int(admin.group(1))
                self.tls_port = int(m_tls.group(1)) if m_tls else None
                break
            if self.proc.poll() is not None:
                raise RuntimeError(f"dcserve exited with {self.proc.returncode}:\n{text.decode(errors='replace')}")
            time.sleep(0.05)
        if self.port is None:
            self.stop()
            raise RuntimeError("dcserve did not report its port:\n" + self.logs())

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def logs(self) -> str:
        return open(self.log_file.name, "rb").read().decode(errors="replace")

    log = logs

    def alive(self) -> bool:
        return self.proc.poll() is None

    def connect(self, timeout: float = 10) -> socket.socket:
        """A raw TCP connection to the HTTP listener."""
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout)

    def get(self, path: str, headers: dict[str, str] | None = None, method: str = "GET", admin: bool = False):
        """One request with urllib (no automatic decompression); returns (status, headers, body).
        `admin` sends it to the admin listener (metrics, health)."""
        base = f"http://127.0.0.1:{self.admin_port}" if admin else self.base
        req = urllib.request.Request(base + path, headers=headers or {}, method=method)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int:
        """Signals the server (SIGTERM: graceful shutdown) and returns its exit code; kills it if it
        has not exited within `timeout` seconds."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
