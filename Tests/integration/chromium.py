"""A minimal headless-Chromium driver over the DevTools protocol (websocket-client only).

Launches Debian's chromium binary directly (the /usr/bin wrapper misbehaves headless), with a private
profile, and exposes just what the browser tests need: open a page, evaluate JavaScript (awaiting
promises), and the network events Chromium reports, including the request headers it actually sent
(Network.requestWillBeSentExtraInfo) and the raw response headers (Network.responseReceivedExtraInfo).
Every wait is bounded; close() kills the browser by PID.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time

import websocket

CHROMIUM = os.environ.get("DCSERVE_CHROMIUM", "/usr/lib/chromium/chromium")


class CDPError(RuntimeError):
    pass


class Chromium:
    def __init__(self, extra_args: list[str] | None = None, timeout: float = 30.0):
        if not os.access(CHROMIUM, os.X_OK):
            raise CDPError(f"{CHROMIUM} not found: `make test` installs Debian's chromium package")
        self.profile = tempfile.mkdtemp(prefix="dcserve-chromium-")
        args = [
            CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--no-default-browser-check", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--remote-debugging-port=0",
            "--remote-debugging-address=127.0.0.1", f"--user-data-dir={self.profile}",
        ] + (extra_args or []) + ["about:blank"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + timeout
        while not os.path.exists(port_file) or os.path.getsize(port_file) == 0:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace")[-2000:]
                raise CDPError(f"chromium exited with {self.proc.returncode}: {err}")
            if time.monotonic() > deadline:
                self.close()
                raise CDPError("chromium did not open its DevTools port in time")
            time.sleep(0.05)
        port, path = open(port_file).read().split("\n")[:2]
        self.ws = websocket.create_connection(f"ws://127.0.0.1:{port}{path}", timeout=timeout,
                                              suppress_origin=True)
        self.next_id = 0
        self.events: list[dict] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Network.enable", session=True)
        self.call("Network.setCacheDisabled", {"cacheDisabled": False}, session=True)
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)

    # -- protocol -----------------------------------------------------------------------------
    def call(self, method: str, params: dict | None = None, session: bool = False,
             timeout: float = 30.0) -> dict:
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        self.ws.send(json.dumps(msg))
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise CDPError(f"{method}: no answer in {timeout}s")
            self.ws.settimeout(remaining)
            reply = json.loads(self.ws.recv())
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise CDPError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def pump(self, seconds: float) -> None:
        """Collects events for up to `seconds`."""
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0:
            self.ws.settimeout(remaining)
            try:
                reply = json.loads(self.ws.recv())
            except websocket.WebSocketTimeoutException:
                return
            if "method" in reply:
                self.events.append(reply)

    # -- page helpers -------------------------------------------------------------------------
    def navigate(self, url: str, timeout: float = 30.0) -> None:
        self.call("Page.navigate", {"url": url}, session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(e["method"] == "Page.loadEventFired" for e in self.events):
                return
            self.pump(0.1)
        raise CDPError(f"{url} did not load in {timeout}s")

    def evaluate(self, expression: str, timeout: float = 30.0):
        """Evaluates JavaScript in the page, awaiting a returned promise; returns its JSON value."""
        result = self.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                                "returnByValue": True}, session=True, timeout=timeout)
        if "exceptionDetails" in result:
            raise CDPError(f"page script failed: {json.dumps(result['exceptionDetails'])[:2000]}")
        return result["result"].get("value")

    def sent_headers(self, url_suffix: str) -> list[dict]:
        """Request headers Chromium actually sent for URLs ending in `url_suffix`, oldest first,
        with lower-cased names."""
        urls = {e["params"]["requestId"]: e["params"]["request"]["url"]
                for e in self.events if e["method"] == "Network.requestWillBeSent"}
        out = []
        for e in self.events:
            if e["method"] == "Network.requestWillBeSentExtraInfo":
                url = urls.get(e["params"]["requestId"], "")
                if url.endswith(url_suffix):
                    out.append({k.lower(): v for k, v in e["params"]["headers"].items()})
        return out

    def received_headers(self, url_suffix: str) -> list[dict]:
        """Raw response headers for URLs ending in `url_suffix`, oldest first, lower-cased names."""
        urls = {e["params"]["requestId"]: e["params"]["request"]["url"]
                for e in self.events if e["method"] == "Network.requestWillBeSent"}
        out = []
        for e in self.events:
            if e["method"] == "Network.responseReceivedExtraInfo":
                url = urls.get(e["params"]["requestId"], "")
                if url.endswith(url_suffix):
                    out.append({k.lower(): v for k, v in e["params"]["headers"].items()})
        return out

    def close(self) -> None:
        try:
            self.ws.close()
        except Exception:
            pass
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
