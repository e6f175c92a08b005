"""Recording and replaying HTTP Archives for `dcserve estimate` tests.

- `Mitmdump`: mitmproxy's `mitmdump` as a reverse proxy in front of an API, writing a HAR on exit
  (a recorder nobody here wrote); stopped by PID.
- `drive_seed_session(base)`: the three seed cases (a news feed, two users' calendars, a chat between
  two users) as a script of requests with updates in between.
- `HarReplayUpstream`: an upstream serving a HAR's recorded responses, per (method, path) in order.
- `ReplayClient`: an RFC 9842 client written here in Python (no dcserve code): keeps dictionaries per
  partition, names the best match in Available-Dictionary, decodes dcb/dcz/br/zstd/gzip with
  independent decoders, registers Use-As-Dictionary responses, fetches Link dictionaries; counts the
  bytes of every response head and body it receives.
"""
from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import decoders

from paths import ROOT
MITMDUMP = os.environ.get("DCSERVE_MITMDUMP", str(ROOT / ".deps/venv-mitmproxy/bin/mitmdump"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Mitmdump:
    """`mitmdump --mode reverse:UPSTREAM --set hardump=FILE` on a free 127.0.0.1 port."""

    def __init__(self, upstream: str, har_path: pathlib.Path, timeout: float = 30.0):
        if not os.access(MITMDUMP, os.X_OK):
            raise RuntimeError(f"{MITMDUMP} missing: run scripts/install-python-deps.sh (make test does)")
        self.har_path = har_path
        self.port = free_port()
        self.confdir = tempfile.mkdtemp(prefix="mitmproxy-conf-")
        self.log = tempfile.NamedTemporaryFile(prefix="mitmdump-", suffix=".txt", delete=False)
        self.proc = subprocess.Popen(
            [MITMDUMP, "--mode", f"reverse:{upstream}", "--listen-host", "127.0.0.1", "-p", str(self.port),
             "--set", f"confdir={self.confdir}", "--set", f"hardump={har_path}", "-q"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("mitmdump exited:\n" + self.logs())
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("mitmdump did not listen:\n" + self.logs())

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def logs(self) -> str:
        return open(self.log.name, "rb").read().decode(errors="replace")

    def stop(self) -> None:
        """SIGINT (mitmdump writes the HAR on the way out), then wait; SIGKILL after 30 s."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _request(base: str, method: str, path: str, headers: dict | None = None, body: bytes | None = None):
    host, port = base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def drive_seed_session(base: str, rounds: int = 6) -> int:
    """News, two users' calendars and a chat, each read once and then after each of `rounds` updates
    (interleaved, as several clients would). Returns the number of requests sent."""
    sent = 0

    def call(method, path, user=None, body=None):
        nonlocal sent
        headers = {"Accept": "application/json", "Accept-Encoding": "gzip, deflate, br, zstd"}
        if user:
            headers["Authorization"] = f"Bearer {user}"
        if body is not None:
            headers["Content-Type"] = "application/json"
        status, _ = _request(base, method, path, headers, None if body is None else json.dumps(body).encode())
        assert status in (200, 201), (method, path, status)
        sent += 1

    call("GET", "/latest_news")
    for user in ("alice", "bob"):
        call("GET", "/api/calendar", user)
        call("GET", "/api/chats/1/messages", user)
    for r in range(rounds):
        call("POST", "/latest_news/update")
        call("GET", "/latest_news")
        for user in ("alice", "bob"):
            call("POST", "/api/calendar/update", user)
            call("GET", "/api/calendar", user)
        author = ("alice", "bob")[r % 2]
        call("POST", "/api/chats/1/messages", author, {"text": f"Message {r}: see the agenda for the tram line review at ten."})
        for user in ("alice", "bob"):
            call("GET", "/api/chats/1/messages", user)
    return sent


def load_har(path: pathlib.Path) -> list[dict]:
    """The HAR's entries ordered by startedDateTime (stable)."""
    entries = json.loads(path.read_text())["log"]["entries"]
    return sorted(entries, key=lambda e: e["startedDateTime"])


def recorded_body(entry: dict) -> bytes | None:
    content = entry["response"]["content"]
    if "text" not in content:
        return None
    if content.get("encoding") == "base64":
        return base64.b64decode(content["text"])
    return content["text"].encode()


def target(url: str) -> str:
    return "/" + url.split("://", 1)[1].split("/", 1)[1] if "/" in url.split("://", 1)[1] else "/"


DROPPED_RESPONSE_FIELDS = {"content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive",
                           "proxy-connection", "te", "trailer", "upgrade"}


class HarReplayUpstream:
    """Serves a HAR's recorded responses (identity bodies) per (method, path and query) in order; the
    last one repeats. A ThreadingHTTPServer on a free port, stopped by `stop()`."""

    def __init__(self, entries: list[dict]):
        queues: dict[tuple[str, str], list] = {}
        for e in entries:
            body = recorded_body(e)
            if body is None:
                continue
            queues.setdefault((e["request"]["method"], target(e["request"]["url"])), []).append((e["response"], body))
        positions: dict[tuple[str, str], int] = {}
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _serve(self):
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                key = (self.command, self.path)
                with lock:
                    queue = queues.get(key)
                    if not queue:
                        self.send_response_only(404, "Not Recorded")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    i = positions.get(key, 0)
                    positions[key] = i + 1
                    response, body = queue[min(i, len(queue) - 1)]
                self.send_response_only(response["status"], response.get("statusText") or "Recorded")
                for h in response["headers"]:
                    if h["name"].lower() not in DROPPED_RESPONSE_FIELDS and not h["name"].startswith(":"):
                        self.send_header(h["name"], h["value"])
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _pattern_regex(match: str) -> re.Pattern:
    """A path-only URL pattern (`*` wildcards, `:name` segments) as a regular expression."""
    out = ""
    for token in re.split(r"(\*|:[A-Za-z_][A-Za-z0-9_]*)", match):
        if token == "*":
            out += ".*"
        elif token.startswith(":"):
            out += "[^/]+"
        else:
            out += re.escape(token)
    return re.compile(out + r"\Z")


def _sf_members(value: str) -> dict:
    """The members of a simple sf-dictionary (strings, tokens, inner lists of strings)."""
    members = {}
    for m in re.finditer(r'([a-z*][a-z0-9_.*-]*)(?:=("(?:[^"\\]|\\.)*"|\([^)]*\)|[^,;\s]+))?', value):
        name, raw = m.group(1), m.group(2)
        if raw is None:
            members[name] = True
        elif raw.startswith('"'):
            members[name] = raw[1:-1]
        elif raw.startswith("("):
            members[name] = re.findall(r'"((?:[^"\\]|\\.)*)"', raw)
        else:
            members[name] = raw
    return members


def _usable_lifetime(cache_control: str) -> bool:
    cc = {d.split("=")[0].strip().lower(): (d.split("=", 1)[1].strip() if "=" in d else "") for d in cache_control.split(",") if d.strip()}
    if "no-store" in cc or "no-cache" in cc:
        return False
    return int(cc.get("max-age", "0") or 0) + int(cc.get("stale-while-revalidate", "0") or 0) > 0


class ReplayClient:
    """A dictionary-transport client (see the module comment). `totals` sums head and body bytes of every
    response received (Link fetches included); `decisions` lists each main response's DCServe-Decision."""

    def __init__(self, base: str, brotli_cli: str, accept_encoding: str = "gzip, deflate, br, zstd"):
        host, port = base.removeprefix("http://").split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=60)
        self.brotli_cli = brotli_cli
        self.accept_encoding = accept_encoding
        self.dictionaries: dict[str, list[dict]] = {}  # partition -> entries
        self.sequence = 0
        self.total_bytes = 0
        self.decisions: list[str | None] = []

    def _select(self, partition: str, path: str, dest: str) -> dict | None:
        candidates = [d for d in self.dictionaries.get(partition, [])
                      if d["regex"].match(path) and (not d["dest"] or dest in d["dest"])]
        if not candidates:
            return None
        return max(candidates, key=lambda d: (bool(d["dest"]), len(d["match"]), d["seq"]))

    def _exchange(self, method: str, path: str, headers: dict, body: bytes | None):
        self.conn.request(method, path, body=body, headers=headers)
        r = self.conn.getresponse()
        data = r.read()
        fields = r.getheaders()
        head = len(f"HTTP/1.1 {r.status} {r.reason}\r\n") + sum(len(k) + 2 + len(v) + 2 for k, v in fields) + 2
        self.total_bytes += head + len(data)
        return r.status, fields, data

    def get(self, method: str, path: str, headers: dict, body: bytes | None, partition: str, dest: str = "") -> None:
        """One request as a browser-like client would send it; registers dictionaries and follows Link."""
        headers = {k: v for k, v in headers.items() if k.lower() not in ("accept-encoding", "host", "content-length",
                                                                         "available-dictionary", "dictionary-id")}
        chosen = self._select(partition, path.split("?")[0], dest) if method == "GET" else None
        headers["Accept-Encoding"] = self.accept_encoding + (", dcb, dcz" if chosen else "")
        if chosen:
            headers["Available-Dictionary"] = ":" + base64.b64encode(chosen["hash"]).decode() + ":"
            if chosen.get("id"):
                headers["Dictionary-ID"] = '"' + chosen["id"] + '"'
        status, fields, data = self._exchange(method, path, headers, body)
        lower = {}
        for k, v in fields:
            lower.setdefault(k.lower(), v)
        self.decisions.append(lower.get("dcserve-decision"))
        if method != "GET" or status != 200:
            return
        decoded = self._decode(data, lower.get("content-encoding", "identity"), chosen)
        self._register(partition, path, lower, decoded)
        for link in re.findall(r'<([^>]+)>\s*;\s*rel="?compression-dictionary"?', lower.get("link", "")):
            link = target(link) if "://" in link else link
            if any(d["source"] == link for d in self.dictionaries.get(partition, [])):
                continue
            link_chosen = self._select(partition, link, "")
            link_headers = {"Accept-Encoding": self.accept_encoding + (", dcb, dcz" if link_chosen else "")}
            # The app's client sends its credentials: a per-user dictionary is served to its user only.
            link_headers.update({k: v for k, v in headers.items() if k.lower() in ("authorization", "cookie")})
            if link_chosen:
                link_headers["Available-Dictionary"] = ":" + base64.b64encode(link_chosen["hash"]).decode() + ":"
            s, f, d = self._exchange("GET", link, link_headers, None)
            fl = {k.lower(): v for k, v in f}
            if s == 200:
                self._register(partition, link, fl, self._decode(d, fl.get("content-encoding", "identity"), link_chosen))

    def _decode(self, data: bytes, coding: str, chosen: dict | None) -> bytes:
        if coding == "dcz":
            return decoders.dcz_with_python_zstandard(data, chosen["bytes"])
        if coding == "dcb":
            return decoders.dcb_with_brotli_cli(data, chosen["bytes"], self.brotli_cli)
        return decoders.decode_plain(data, coding, self.brotli_cli)

    def _register(self, partition: str, path: str, fields: dict, decoded: bytes) -> None:
        value = fields.get("use-as-dictionary")
        if not value or not _usable_lifetime(fields.get("cache-control", "")):
            return
        m = _sf_members(value)
        if not isinstance(m.get("match"), str):
            return
        self.sequence += 1
        dest = m.get("match-dest") if isinstance(m.get("match-dest"), list) else []
        entries = [d for d in self.dictionaries.get(partition, []) if (d["match"], d["dest"]) != (m["match"], dest)]
        entries.append({"match": m["match"], "regex": _pattern_regex(m["match"]), "dest": dest, "id": m.get("id"),
                        "hash": hashlib.sha256(decoded).digest(), "bytes": decoded, "seq": self.sequence, "source": path})
        self.dictionaries[partition] = entries

    def close(self) -> None:
        self.conn.close()
