"""WebSocket through dcserve's upgrade tunnel: the release binary in front of the example API
(Starlette's WebSocket route on uvicorn with the `websockets` package), driven by clients dcserve did
not write: Python's `websocket-client`, raw sockets, and headless Chromium's `WebSocket`.

Covers: 1,000 messages each way, a 10 MB message each way, ping/pong, close from either side (the
close and the end of stream reach the other side), the upstream refusing the upgrade (the client gets
the upstream's 403), the upstream down (502), `h2c` not forwarded, nothing of dictionary transport
on the `101`, the same over the TLS listener, Chromium's WebSocket from a page served by dcserve,
the tunnel's own idle timeout, its metrics, and 20 tunnels whose client never reads while the
upstream keeps sending: dcserve's resident memory grows by less than `RSS_BOUND` (each direction of
a tunnel buffers at most 64 KiB; the rest waits in the kernel's socket buffers and, once they are
full, in the upstream).
"""
from __future__ import annotations

import json
import pathlib
import re
import socket
import subprocess
import time

import pytest
import websocket

from chromium import Chromium
from dcserve_server import DCServe
from tls_support import client_context, make_ca, make_leaf
from upstream_support import ExampleAPI, free_port

#: Largest growth of dcserve's VmRSS allowed while 20 never-reading clients are flooded (stated bound:
#: 20 tunnels x 64 KiB buffered toward the client = 1.25 MiB, plus allocator and stack slack).
RSS_BOUND = 24 << 20


def config_file(tmp: pathlib.Path, upstream: str, **upstream_settings) -> str:
    """/api/ proxied to `upstream` (with a dictionary rule covering /api/*: the tunnel must not meet
    it), everything else served from `tmp`/site."""
    n = len(list(tmp.glob("tunnel-*.json")))
    config = {
        "server": {"host": "127.0.0.1", "port": 0},
        "store": {"path": str(tmp / f"store-{n}")},
        "site": {"root": str(tmp / "site")},
        "compression": {"precompress": False},
        "upstreams": {"names": ["api"], "api": {"servers": [upstream], "connectTimeoutSeconds": 2,
                                                "readTimeoutSeconds": 5, **upstream_settings}},
        "routes": {"names": ["api", "site"], "api": {"prefix": "/api/", "upstream": "api"}, "site": {"prefix": "/"}},
        "dictionaries": {"rules": ["items"],
                         "items": {"match": "/api/*", "resources": "/api/items", "compress": ["/api/*"], "maxAge": 3600}},
    }
    path = tmp / f"tunnel-{n}.json"
    path.write_text(json.dumps(config))
    return str(path)


PAGE = b"""<!doctype html><title>ws</title>
<script>
function run(url) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.binaryType = "arraybuffer";
    const echoes = [];
    let big = null;
    ws.onerror = () => reject("websocket error");
    ws.onopen = () => { for (let i = 0; i < 200; i++) ws.send("message " + i); ws.send("big 1000000"); };
    ws.onmessage = (e) => {
      if (typeof e.data === "string") { echoes.push(e.data); return; }
      big = e.data.byteLength;
      ws.send("close 4002");
    };
    ws.onclose = (e) => resolve({echoes: echoes.length, inOrder: echoes.every((m, i) => m === "message " + i),
                                 big: big, code: e.code});
  });
}
</script>
"""


@pytest.fixture(scope="module")
def api():
    with ExampleAPI() as a:
        yield a


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    ca = make_ca(d)
    return {"ca": ca, "leaf": make_leaf(ca, d, "leaf")}


@pytest.fixture(scope="module")
def tmp(tmp_path_factory):
    d = tmp_path_factory.mktemp("tunnel")
    (d / "site").mkdir()
    (d / "site" / "ws.html").write_bytes(PAGE)
    return d


@pytest.fixture(scope="module")
def proxy(dcserve_bin, api, tmp, pki):
    args = ["--config", config_file(tmp, api.base), "--event-loops", "2", "--tls-port", "0",
            "--tls-cert", str(pki["leaf"].cert), "--tls-key", str(pki["leaf"].key)]
    with DCServe(dcserve_bin, args, tls=True) as server:
        yield server


def connect(server: DCServe, path: str = "/api/ws", **options) -> websocket.WebSocket:
    return websocket.create_connection(f"ws://127.0.0.1:{server.port}{path}", timeout=20, **options)


def read_to_end(sock: socket.socket) -> bytes:
    """Everything the peer still sends, until its end of stream (a reset counts as the end)."""
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


def metrics(server: DCServe) -> dict[str, float]:
    status, _, body = server.get("/metrics", admin=True)
    assert status == 200
    values = {}
    for line in body.decode().splitlines():
        m = re.match(r"^(dcserve_(?:open_tunnels|tunnels_total|tunnel_bytes_total)(?:\{[^}]*\})?) (\S+)$", line)
        if m:
            values[m.group(1)] = float(m.group(2))
    return values


def wait_until(condition, what: str, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout}s")
        time.sleep(0.05)


def rss_bytes(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_thousand_messages_each_way(proxy):
    ws = connect(proxy)
    try:
        for i in range(1000):
            ws.send(f"message {i}")
        assert [ws.recv() for _ in range(1000)] == [f"message {i}" for i in range(1000)]
        ws.send("flood 1000 100")
        for _ in range(1000):
            assert ws.recv() == b"f" * 100
    finally:
        ws.close()


def test_ten_megabyte_message_each_way(proxy):
    ws = connect(proxy)
    try:
        payload = bytes(range(256)) * (10_000_000 // 256) + b"end"
        ws.send_binary(payload)
        assert ws.recv() == payload
        ws.send("big 10000000")
        got = ws.recv()
        assert len(got) == 10_000_000 and got == (bytes(range(251)) * (10_000_000 // 251 + 1))[:10_000_000]
    finally:
        ws.close()


def test_ping_pong(proxy):
    ws = connect(proxy)
    try:
        ws.ping(b"are you there")
        opcode, frame = ws.recv_data_frame(control_frame=True)
        assert opcode == websocket.ABNF.OPCODE_PONG and frame.data == b"are you there"
        ws.send("after the ping")
        assert ws.recv() == "after the ping"
    finally:
        ws.close()


def test_close_from_the_client_reaches_the_upstream_and_ends_the_stream(proxy):
    ws = connect(proxy)
    ws.send("hello")
    assert ws.recv() == "hello"
    ws.send_close(status=websocket.STATUS_NORMAL, reason=b"bye")
    opcode, frame = ws.recv_data_frame(control_frame=True)
    assert opcode == websocket.ABNF.OPCODE_CLOSE
    assert int.from_bytes(frame.data[:2], "big") == websocket.STATUS_NORMAL  # the upstream's answer
    # The upstream closes its connection: its end of stream reaches the client through the tunnel.
    assert read_to_end(ws.sock) == b""
    ws.shutdown()


def test_close_from_the_server_side(proxy):
    ws = connect(proxy)
    ws.send("close 4001")
    opcode, frame = ws.recv_data_frame(control_frame=True)
    assert opcode == websocket.ABNF.OPCODE_CLOSE and int.from_bytes(frame.data[:2], "big") == 4001
    ws.send_close(status=4001)
    assert read_to_end(ws.sock) == b""
    ws.shutdown()


def test_upgrade_head_is_forwarded_and_the_101_carries_no_dictionary_fields(proxy):
    ws = connect(proxy)
    try:
        head = {k.lower(): v for k, v in ws.getheaders().items()}
        assert ws.getstatus() == 101
        assert head["upgrade"].lower() == "websocket" and head["connection"].lower() == "upgrade"
        assert "sec-websocket-accept" in head
        for name in ("use-as-dictionary", "content-encoding", "content-length", "transfer-encoding"):
            assert name not in head, head
        assert "available-dictionary" not in head.get("vary", "").lower()
        ws.send("headers")
        sent = {k: v for k, v in json.loads(ws.recv())}
        assert sent["upgrade"] == "websocket" and sent["connection"].lower() == "upgrade"
        assert "sec-websocket-key" in sent and sent["x-forwarded-for"] == "127.0.0.1"
    finally:
        ws.close()


def test_upstream_refusing_the_upgrade_is_relayed(proxy):
    with pytest.raises(websocket.WebSocketBadStatusException) as refused:
        connect(proxy, "/api/ws?refuse=1")
    assert refused.value.status_code == 403
    # The connection that carried the refusal serves the next request.
    with proxy.connect() as s:
        key = "dGhlIHNhbXBsZSBub25jZQ=="
        s.sendall(b"GET /api/ws?refuse=1 HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  b"Sec-WebSocket-Key: " + key.encode() + b"\r\nSec-WebSocket-Version: 13\r\n\r\n"
                  b"GET /api/echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = read_to_end(s)
    assert data.startswith(b"HTTP/1.1 403") and data.count(b"HTTP/1.1 200 OK") == 1


def test_upstream_down_is_502(dcserve_bin, tmp):
    with DCServe(dcserve_bin, ["--config", config_file(tmp, f"http://127.0.0.1:{free_port()}")]) as server:
        with pytest.raises(websocket.WebSocketBadStatusException) as failed:
            connect(server)
        assert failed.value.status_code == 502


def test_h2c_upgrade_is_not_forwarded(proxy):
    with proxy.connect() as s:
        s.sendall(b"GET /api/echo HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings, close\r\n"
                  b"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n")
        data = read_to_end(s)
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK")
    sent = {k.lower() for k, _ in json.loads(body)["headers"]}
    assert "upgrade" not in sent and "http2-settings" not in sent


def test_over_the_tls_listener(proxy, pki):
    ws = websocket.create_connection(f"wss://localhost:{proxy.tls_port}/api/ws", timeout=20,
                                     sslopt={"context": client_context(pki["ca"])})
    try:
        for i in range(1000):
            ws.send(f"tls {i}")
        assert [ws.recv() for _ in range(1000)] == [f"tls {i}" for i in range(1000)]
        payload = bytes(range(256)) * 4096 * 10
        ws.send_binary(payload)
        assert ws.recv() == payload
        ws.ping(b"tls ping")
        opcode, frame = ws.recv_data_frame(control_frame=True)
        assert opcode == websocket.ABNF.OPCODE_PONG and frame.data == b"tls ping"
        ws.send("close 4003")
        opcode, frame = ws.recv_data_frame(control_frame=True)
        assert opcode == websocket.ABNF.OPCODE_CLOSE and int.from_bytes(frame.data[:2], "big") == 4003
    finally:
        ws.close()


def test_chromium_websocket_from_a_page_served_by_dcserve(proxy):
    with Chromium() as browser:
        browser.navigate(f"http://127.0.0.1:{proxy.port}/ws.html")
        result = browser.evaluate(f"run('ws://127.0.0.1:{proxy.port}/api/ws')", timeout=60)
    assert result == {"echoes": 200, "inOrder": True, "big": 1000000, "code": 4002}


def test_tunnel_idle_timeout(dcserve_bin, api, tmp):
    with DCServe(dcserve_bin, ["--config", config_file(tmp, api.base, tunnelIdleTimeoutSeconds=1)]) as server:
        ws = connect(server)
        ws.send("still here")
        assert ws.recv() == "still here"
        # No byte either way: dcserve closes both connections after the tunnel's own idle timeout
        # (the server's and the upstream's read timeouts, 60 s and 5 s, are not what ends it).
        ws.sock.settimeout(30)
        assert read_to_end(ws.sock) == b""
        ws.shutdown()
        wait_until(lambda: metrics(server).get("dcserve_open_tunnels") == 0, "the tunnel is counted closed")


@pytest.mark.parametrize("value", [0, -1, 1e300, "soon"])
def test_nonsense_tunnel_idle_timeout_is_refused_naming_the_key(dcserve_bin, tmp, value):
    path = config_file(tmp, "http://127.0.0.1:9", tunnelIdleTimeoutSeconds=value)
    p = subprocess.run([dcserve_bin, "serve", "--config", path, "--port", "0", "--no-admin"], capture_output=True, timeout=30)
    assert p.returncode != 0
    assert "upstreams.api.tunnelIdleTimeoutSeconds" in p.stderr.decode(), p.stderr.decode()


def test_metrics_count_open_tunnels_and_bytes_each_way(dcserve_bin, api, tmp):
    with DCServe(dcserve_bin, ["--config", config_file(tmp, api.base)]) as server:
        sockets = [connect(server) for _ in range(3)]
        for ws in sockets:
            ws.send_binary(b"x" * 100_000)
            assert len(ws.recv()) == 100_000
        m = metrics(server)
        assert m["dcserve_open_tunnels"] == 3 and m["dcserve_tunnels_total"] == 3
        # Frames add a few bytes (client frames are masked): at least the payloads, each way.
        assert m['dcserve_tunnel_bytes_total{direction="client_to_upstream"}'] >= 300_000
        assert m['dcserve_tunnel_bytes_total{direction="upstream_to_client"}'] >= 300_000
        for ws in sockets:
            ws.close()
        wait_until(lambda: metrics(server).get("dcserve_open_tunnels") == 0, "tunnels counted closed")


def test_twenty_never_reading_clients_keep_memory_bounded(dcserve_bin, api, tmp):
    with DCServe(dcserve_bin, ["--config", config_file(tmp, api.base)]) as server:
        warm = connect(server)
        warm.send_binary(b"w" * 1_000_000)
        assert len(warm.recv()) == 1_000_000
        warm.close()
        before = rss_bytes(server.proc.pid)
        clients = [connect(server) for _ in range(20)]
        for ws in clients:
            ws.send("flood 4000 65536")  # 256 MiB each, never read
        # The upstream writes until every path is full: the tunnels' reads from it then stop.
        wait_until(lambda: metrics(server)['dcserve_tunnel_bytes_total{direction="upstream_to_client"}'] > 20 * 65536,
                   "the upstream's floods reach the clients' sockets")
        samples = []
        for _ in range(10):
            time.sleep(0.2)
            samples.append(rss_bytes(server.proc.pid))
        growth = max(samples) - before
        print(f"dcserve VmRSS {before >> 10} KiB before, {max(samples) >> 10} KiB at most with 20 flooded tunnels")
        assert growth < RSS_BOUND, f"RSS grew by {growth >> 10} KiB"
        for ws in clients:
            ws.shutdown()
        wait_until(lambda: metrics(server).get("dcserve_open_tunnels") == 0, "the tunnels close with their clients")
        ws = connect(server)
        ws.send("alive")
        assert ws.recv() == "alive"
        ws.close()
