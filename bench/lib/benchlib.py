"""Shared benchmark helpers: start dcserve / nginx on 127.0.0.1, run wrk, parse its output.

Everything started here is stopped by PID; every load run is bounded by wrk's -d duration.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Tests", "integration"))
import paths  # noqa: E402 (Tests/integration/paths.py: the repository root, the programs)

ROOT = str(paths.ROOT)
DCSERVE = paths.DCSERVE_BIN


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


class Process:
    def __init__(self, args: list[str], port: int, env: dict | None = None, cwd: str | None = None,
                 start_timeout: float = 20.0):
        self.log = tempfile.NamedTemporaryFile(prefix="bench-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=env, cwd=cwd)
        self.port = port
        self.plain_port = port  # servers with a TLS listener on `port` set their plain HTTP one here
        try:
            wait_port(port, start_timeout)
        except Exception:
            self.stop()
            raise RuntimeError(open(self.log.name).read()[-3000:])

    def rss_kib(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def server_pids(self) -> list[int]:
        """The processes that serve requests: the process itself, or its children (nginx workers)."""
        try:
            with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
                children = [int(p) for p in f.read().split()]
        except OSError:
            children = []
        return children or [self.proc.pid]

    def cpu_seconds(self) -> float:
        """User + system CPU time consumed so far by `server_pids()`."""
        user, system = self.cpu_split()
        return user + system

    def cpu_split(self) -> tuple[float, float]:
        """(user, system) CPU time consumed so far by `server_pids()`, seconds."""
        user = system = 0
        for pid in self.server_pids():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                user += int(fields[11])  # utime (field 14)
                system += int(fields[12])  # stime (field 15)
            except OSError:
                pass
        tick = os.sysconf("SC_CLK_TCK")
        return user / tick, system / tick

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def dcserve(args: list[str], env: dict | None = None, ssl: tuple[str, str] | None = None,
            start_timeout: float = 20.0) -> Process:
    """dcserve on a free port. `ssl=(certificate, key)`: also an HTTPS listener, whose port is then
    the returned process's `port` (the plain listener stays open on `plain_port`)."""
    port = free_port()
    full_env = dict(os.environ, **(env or {}))
    tls_args: list[str] = []
    wait = port
    if ssl:
        wait = free_port()
        tls_args = ["--tls-port", str(wait), "--tls-cert", ssl[0], "--tls-key", ssl[1]]
    process = Process([DCSERVE, "serve", "--port", str(port), "--no-access-log", "--log-level", "warning", *tls_args, *args],
                      wait, env=full_env, start_timeout=start_timeout)
    process.plain_port = port
    return process


def nginx(root: str, workers: int = 2, ssl: tuple[str, str] | None = None) -> Process:
    """nginx from Debian's package with its own prefix: `workers` workers, access log off.
    `ssl=(certificate, key)`: the listener speaks TLS 1.3 only, with a shared session cache and tickets;
    a second listener on `plain_port` serves plain HTTP, with sendfile (and so tcp_nopush) off: nginx
    never uses sendfile under TLS, so both listeners then answer through the same system calls
    (open, pread, write, close) and their CPU per request differs by the cost of TLS alone."""
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    prefix = tempfile.mkdtemp(prefix="bench-nginx-")
    # nginx workers drop privileges (user nobody): the served tree must be world-readable.
    for directory, _, names in os.walk(root):
        os.chmod(directory, 0o755)
        for name in names:
            os.chmod(os.path.join(directory, name), 0o644)
    port = free_port()
    conf = os.path.join(prefix, "nginx.conf")
    ssl_conf = ""
    plain_port = port
    if ssl:
        plain_port = free_port()
        ssl_conf = (f"listen 127.0.0.1:{plain_port}; sendfile off; "
                    f"ssl_certificate {ssl[0]}; ssl_certificate_key {ssl[1]}; ssl_protocols TLSv1.3; "
                    "ssl_session_cache shared:SSL:10m; ssl_session_tickets on;")
    with open(conf, "w") as f:
        f.write(f"""
worker_processes {workers};
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 16384; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    default_type application/octet-stream;
    client_body_temp_path {prefix}/body; proxy_temp_path {prefix}/proxy; fastcgi_temp_path {prefix}/fcgi;
    uwsgi_temp_path {prefix}/uwsgi; scgi_temp_path {prefix}/scgi;
    server {{ listen 127.0.0.1:{port}{" ssl" if ssl else ""}; root {root}; {ssl_conf} }}
}}
""")
    process = Process([binary, "-p", prefix, "-c", conf], port)
    process.plain_port = plain_port
    return process


def wrk(url: str, connections: int = 64, seconds: int = 10, threads: int = 2,
        headers: dict[str, str] | None = None, server: "Process | None" = None) -> dict:
    """Runs wrk with latency stats; returns req/s, p99 (ms), non-2xx count and, given the `server`,
    its CPU time per request in microseconds ("cpu_us": less sensitive to other load than req/s)."""
    cpu_before = server.cpu_seconds() if server else 0.0
    args = ["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{seconds}s", "--latency"]
    for k, v in (headers or {}).items():
        args += ["-H", f"{k}: {v}"]
    out = subprocess.run(args + [url], capture_output=True, text=True, timeout=seconds + 60).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[p99.group(2)]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    cpu_us = (server.cpu_seconds() - cpu_before) * 1e6 / max(requests, 1) if server else float("nan")
    return {"rps": rps, "p99_ms": float(p99.group(1)) * scale, "non2xx": int(errors.group(1)) if errors else 0,
            "cpu_us": cpu_us, "raw": out}
