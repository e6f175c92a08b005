"""bench/tunnel: WebSocket messages through dcserve's upgrade tunnel and through nginx's WebSocket
proxying, in front of one upstream, in alternating rounds. See `run` for the target.

Load (bounded): CONNECTIONS WebSocket connections (default 16), each keeping WINDOW messages
(default 8) in flight: a message is one masked client frame of SIZE payload bytes sent through the
front to the upstream and echoed back through it, so each message crosses the tunnel once each
way. The client (this process, asyncio) sends a new message for every one that came back, for
DURATION seconds (default 10) per front and round, ROUNDS rounds (default 3), payload SIZES (default
"64,16384"). Reported per front: messages per second, and the front's CPU (user + system ticks of
its processes from /proc/PID/stat) per message, and the front's thread switches per message (voluntary
and involuntary context switches of all its threads, /proc/PID/task/*/status: each is a sleep in
epoll_wait and a wake-up, the main cost of small messages). The upstream (echo_upstream.py, its own process)
answers the upgrade and echoes bytes without parsing frames: both fronts only carry bytes after the
101, so this measures them, not a WebSocket library.

Fronts: dcserve with one upstream and a route `/` (access log off, 2 event loops) and nginx with 2
workers, `proxy_http_version 1.1`, `proxy_set_header Upgrade $http_upgrade`, `proxy_set_header
Connection "upgrade"`. Before the load, each front must pass a check: the 101 with the upstream's
Sec-WebSocket-Accept, then a frame echoed byte for byte.
"""
from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import shutil
import socket
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import benchlib  # noqa: E402
from benchlib import Process, free_port  # noqa: E402

DURATION = float(os.environ.get("DURATION", "10"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
CONNECTIONS = int(os.environ.get("CONNECTIONS", "16"))
WINDOW = int(os.environ.get("WINDOW", "8"))
SIZES = [int(s) for s in os.environ.get("SIZES", "64,16384").split(",")]
HERE = os.path.dirname(os.path.abspath(__file__))
KEY = b"dGhlIHNhbXBsZSBub25jZQ=="
ACCEPT = base64.b64encode(hashlib.sha1(KEY + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())


def frame(size: int) -> bytes:
    """One masked binary client frame with `size` payload bytes."""
    mask = b"\x01\x02\x03\x04"
    payload = bytes((i * 7) & 0xFF for i in range(size))
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    if size < 126:
        header = bytes([0x82, 0x80 | size])
    elif size < 65536:
        header = bytes([0x82, 0x80 | 126]) + size.to_bytes(2, "big")
    else:
        header = bytes([0x82, 0x80 | 127]) + size.to_bytes(8, "big")
    return header + mask + masked


def handshake(port: int) -> bytes:
    return (f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {KEY.decode()}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode()


def check(port: int, name: str) -> None:
    """The front relays the 101 and then bytes, unchanged, both ways."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(handshake(port))
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(4096)
            if not chunk:
                raise SystemExit(f"{name}: closed before the 101")
            head += chunk
        head, _, rest = head.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101") or ACCEPT not in head:
            raise SystemExit(f"{name}: no 101 with the upstream's Sec-WebSocket-Accept:\n{head.decode(errors='replace')}")
        sent = frame(1000) * 3
        s.sendall(sent)
        got = rest
        while len(got) < len(sent):
            chunk = s.recv(65536)
            if not chunk:
                raise SystemExit(f"{name}: closed during the echo")
            got += chunk
        if got != sent:
            raise SystemExit(f"{name}: the echo differs from what was sent")


class Client(asyncio.Protocol):
    """One connection keeping WINDOW messages in flight."""

    def __init__(self, port: int, message: bytes, opened: asyncio.Future, state: dict):
        self.port, self.message, self.opened, self.state = port, message, opened, state
        self.head = b""
        self.open = False
        self.pending = 0  # bytes of a partly received message

    def connection_made(self, transport):
        self.transport = transport
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        transport.write(handshake(self.port))

    def data_received(self, data: bytes) -> None:
        if not self.open:
            self.head += data
            if b"\r\n\r\n" not in self.head:
                return
            head, _, data = self.head.partition(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 101"):
                self.opened.set_exception(RuntimeError(head.decode(errors="replace")))
                return
            self.open = True
            self.opened.set_result(None)
            for _ in range(WINDOW):
                self.transport.write(self.message)
        total = self.pending + len(data)
        done, self.pending = divmod(total, len(self.message))
        if done:
            self.state["messages"] += done
            if not self.state["stop"]:
                self.transport.write(self.message * done)


def switches(front: Process) -> int:
    """Context switches (voluntary + involuntary) so far of every thread of the front's processes."""
    total = 0
    for pid in front.server_pids():
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/status") as f:
                    total += sum(int(line.split()[1]) for line in f if "ctxt_switches:" in line)
            except OSError:
                pass
    return total


async def load(port: int, size: int, seconds: float, front: Process) -> dict:
    loop = asyncio.get_running_loop()
    message = frame(size)
    state = {"messages": 0, "stop": False}
    clients = []
    for _ in range(CONNECTIONS):
        opened = loop.create_future()
        transport, _ = await loop.create_connection(lambda: Client(port, message, opened, state), "127.0.0.1", port)
        clients.append((transport, opened))
    await asyncio.gather(*(opened for _, opened in clients))
    await asyncio.sleep(0.3)  # warm-up
    start_messages, start_cpu, start_switches, start = state["messages"], front.cpu_seconds(), switches(front), time.monotonic()
    await asyncio.sleep(seconds)
    messages, cpu, elapsed = state["messages"] - start_messages, front.cpu_seconds() - start_cpu, time.monotonic() - start
    switched = switches(front) - start_switches
    state["stop"] = True
    for transport, _ in clients:
        transport.close()
    await asyncio.sleep(0.2)
    if messages == 0:
        raise SystemExit("no message came back")
    return {"mps": messages / elapsed, "cpu_us": cpu / messages * 1e6, "cs": switched / messages}


def nginx_front(upstream_port: int, workers: int = 2) -> Process:
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    prefix = tempfile.mkdtemp(prefix="bench-nginx-tunnel-")
    port = free_port()
    conf = os.path.join(prefix, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""
worker_processes {workers};
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 16384; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/body; proxy_temp_path {prefix}/proxy; fastcgi_temp_path {prefix}/fcgi;
    uwsgi_temp_path {prefix}/uwsgi; scgi_temp_path {prefix}/scgi;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://127.0.0.1:{upstream_port};
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection "upgrade";
            proxy_set_header Host $host;
            proxy_read_timeout 300s;
        }}
    }}
}}
""")
    return Process([binary, "-p", prefix, "-c", conf], port)


def dcserve_front(upstream_port: int, workdir: str) -> Process:
    config = {
        "server": {"host": "127.0.0.1", "accessLog": False, "eventLoops": 2},  # nginx: 2 workers
        "store": {"path": os.path.join(workdir, "store")},
        "site": {"root": workdir},
        "admin": {"enabled": False},
        "compression": {"precompress": False},
        "upstreams": {"names": ["ws"], "ws": {"servers": [f"http://127.0.0.1:{upstream_port}"]}},
        "routes": {"names": ["ws"], "ws": {"prefix": "/", "upstream": "ws"}},
    }
    path = os.path.join(workdir, "dcserve-tunnel.json")
    with open(path, "w") as f:
        json.dump(config, f)
    return benchlib.dcserve(["--config", path])


def show(label: str, d: dict, n: dict) -> None:
    print(f"{label:24} {d['mps']:11.0f} {d['cpu_us']:8.2f} {d['cs']:6.3f} {n['mps']:11.0f} {n['cpu_us']:8.2f} {n['cs']:6.3f}"
          f" {d['mps'] / n['mps']:6.2f}x {n['cpu_us'] / d['cpu_us']:7.2f}x", flush=True)


def main() -> None:
    work = tempfile.mkdtemp(prefix="bench-tunnel-")
    upstream_port = free_port()
    print(f"bench/tunnel  {CONNECTIONS} WebSocket connections x {WINDOW} messages in flight, {DURATION:g} s per run, "
          f"{ROUNDS} alternating rounds; upstream: byte echo after the 101 (asyncio); "
          f"fronts: dcserve vs nginx (2 event loops / 2 workers); {os.cpu_count()} cores")
    print("msg/s: echoed messages per second (one message each way); cpu us: the front's CPU per message; "
          "cs: the front's thread switches per message; speed x = dcserve msg/s / nginx msg/s; cpu x = nginx cpu / dcserve cpu (> 1: dcserve cheaper)")
    print(f"{'payload':24} {'dcserve msg/s':>11} {'cpu us':>8} {'cs':>6} {'nginx msg/s':>11} {'cpu us':>8} {'cs':>6} {'speed x':>7} {'cpu x':>8}")
    with Process([sys.executable, os.path.join(HERE, "echo_upstream.py"), str(upstream_port)], upstream_port), \
            dcserve_front(upstream_port, work) as dc, nginx_front(upstream_port) as ng:
        check(dc.port, "dcserve")
        check(ng.port, "nginx")
        for size in SIZES:
            rows = []
            for round_ in range(ROUNDS):
                order = [("dc", dc), ("ng", ng)] if round_ % 2 else [("ng", ng), ("dc", dc)]
                result = {key: asyncio.run(load(front.port, size, DURATION, front)) for key, front in order}
                rows.append(result)
                show(f"{size} B round {round_ + 1}", result["dc"], result["ng"])
            mean = {k: {m: statistics.mean(r[k][m] for r in rows) for m in ("mps", "cpu_us", "cs")} for k in ("dc", "ng")}
            show(f"{size} B MEAN of {ROUNDS}", mean["dc"], mean["ng"])
        print(f"RSS after the runs: dcserve {dc.rss_kib() / 1024:.1f} MiB")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
