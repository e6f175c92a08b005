"""Starts the real `dcserve serve` binary for a test and stops it by PID.

The server binds 127.0.0.1 on a free port (`--port 0`) and logs the address it listens on; the
fixture reads that line from stderr. Logs are kept in a file so a failing test can show them.
"""
from __future__ import annotations

import re
import socket
import urllib.request

from logged_process import LoggedProcess

LISTEN_RE = re.compile(rb"(?<!admin )listening on http://127\.0\.0\.1:(\d+)")
ADMIN_RE = re.compile(rb"admin listening on http://127\.0\.0\.1:(\d+)")
TLS_LISTEN_RE = re.compile(rb"listening on https://127\.0\.0\.1:(\d+)")


class DCServe(LoggedProcess):
    def __init__(self, binary: str, args: list[str], cwd: str | None = None,
                 env: dict[str, str] | None = None, timeout: float = 30.0, tls: bool = False):
        """`tls=True`: also wait for the HTTPS listener's log line; its port is `tls_port`."""
        super().__init__([binary, "serve", "--port", "0", "--admin-port", "0", *args], log_prefix="dcserve-log-",
                         cwd=cwd, env=env)

        def listening(text: bytes):
            m, admin, m_tls = LISTEN_RE.search(text), ADMIN_RE.search(text), TLS_LISTEN_RE.search(text)
            return (m, admin, m_tls) if m and admin and (m_tls or not tls) else None

        m, admin, m_tls = self.wait_for_log(listening, "dcserve", timeout)
        self.port, self.admin_port = int(m.group(1)), int(admin.group(1))
        self.tls_port = int(m_tls.group(1)) if m_tls else None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.logs()

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
