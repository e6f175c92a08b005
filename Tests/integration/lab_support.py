"""Support for the `dcserve lab` tests: start the real lab binary, and a scripted Python RFC 9842
client that runs the lab's JSON plan — correctly, or with deliberate mistakes — independent of
dcserve's code (dcz with Python zstandard, dcb with the brotli CLI; see decoders.py).

The scripted client implements just what the plan needs: registration from Use-As-Dictionary (no-store /
no-cache refused; lifetime = max-age + stale-while-revalidate), path patterns with `*`, match-dest,
the RFC 9842 §2.2.3 precedence, Link following, and the dcb/dcz header check. Every request has a
timeout; the lab is stopped by PID.
"""
from __future__ import annotations

import base64
import hashlib
import http.client
import json
import re
import time
import urllib.parse

import decoders
from logged_process import LoggedProcess

LAB_RE = re.compile(rb"lab listening on (https?)://127\.0\.0\.1:(\d+)/lab/")


class Lab(LoggedProcess):
    """`dcserve lab --port 0` until stop(); `port` is read from its log line."""

    def __init__(self, binary: str, args: list[str] | None = None, timeout: float = 30.0):
        super().__init__([binary, "lab", "--port", "0", *(args or [])], log_prefix="dcserve-lab-")
        m = self.wait_for_log(LAB_RE.search, "dcserve lab", timeout)
        self.scheme, self.port = m.group(1).decode(), int(m.group(2))

    @property
    def base(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def request(self, method: str, path: str, headers: list[tuple[str, str]] | None = None,
                body: bytes | None = None) -> tuple[int, list[tuple[str, str]], bytes]:
        """One request on a fresh connection; headers as a list (repeats allowed)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.putrequest(method, path, skip_accept_encoding=True)
            for name, value in headers or []:
                conn.putheader(name, value)
            if body is not None:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            r = conn.getresponse()
            return r.status, r.getheaders(), r.read()
        finally:
            conn.close()

    def json(self, path: str):
        status, _, body = self.request("GET", path)
        assert status == 200, (path, status, body)
        return json.loads(body)

def _sf_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _parse_uad(value: str) -> dict:
    """The few Use-As-Dictionary members the lab sends: match, match-dest, id."""
    out = {"match-dest": []}
    m = re.search(r'(?:^|,)\s*match="((?:[^"\\]|\\.)*)"', value)
    out["match"] = m.group(1) if m else None
    m = re.search(r'match-dest=\(([^)]*)\)', value)
    if m:
        out["match-dest"] = re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))
    m = re.search(r'(?:^|,)\s*id="((?:[^"\\]|\\.)*)"', value)
    if m:
        out["id"] = re.sub(r"\\(.)", r"\1", m.group(1))
    return out


def _lifetime(cache_control: str) -> float | None:
    directives = {}
    for part in cache_control.split(","):
        name, _, arg = part.strip().partition("=")
        directives[name.lower()] = arg
    if "no-store" in directives or "no-cache" in directives or "max-age" not in directives:
        return None
    return float(directives["max-age"]) + float(directives.get("stale-while-revalidate", "0") or 0)


class ScriptedClient:
    """Runs a lab plan. Mistakes (all off = a conforming client):
    - `stale_hash`: keeps naming a dictionary after its lifetime ended;
    - `codings_without_dictionary`: always offers dcb, dcz;
    - `wrong_sha_for`: set of step ids whose reported SHA-256 is of the wrong bytes;
    - `two_dictionaries_in`: set of step ids where it names every matching dictionary, one
      Available-Dictionary line each;
    - `render_undecodable`: reports the SHA-256 of a body it could not decode instead of an error;
    - `plain`: stores no dictionaries at all (an HTTP client that knows nothing of RFC 9842).
    It stores dictionaries synchronously, so a probe that is not ready after one try never will be.
    """

    def __init__(self, lab: Lab, brotli_cli: str, *, stale_hash=False, codings_without_dictionary=False,
                 wrong_sha_for=(), two_dictionaries_in=(), render_undecodable=False, plain=False):
        self.lab, self.brotli_cli = lab, brotli_cli
        self.stale_hash = stale_hash
        self.codings_without_dictionary = codings_without_dictionary
        self.wrong_sha_for = set(wrong_sha_for)
        self.two_dictionaries_in = set(two_dictionaries_in)
        self.render_undecodable = render_undecodable
        self.plain = plain
        self.dictionaries: list[dict] = []  # {pattern, dest, id, bytes, hash, fetched, expires, match}

    def _matching(self, path: str, dest: str) -> list[dict]:
        now = time.time()
        found = [d for d in self.dictionaries
                 if d["pattern"].fullmatch(path) and (not d["dest"] or dest in d["dest"])
                 and (self.stale_hash or d["expires"] > now)]
        # RFC 9842 §2.2.3: match-dest naming the destination, then the longest match, then the latest.
        return sorted(found, key=lambda d: (not d["dest"], -len(d["match"]), -d["fetched"]))

    def get(self, url: str, dest: str = "", step: str = "") -> tuple[int, dict, bytes, dict | None]:
        path = url.split("?")[0]
        chosen = self._matching(path, dest)
        headers = [("Sec-Fetch-Dest", dest or "empty")]
        codings = "gzip, br"
        if chosen:
            for d in chosen[:2] if step in self.two_dictionaries_in else chosen[:1]:
                headers.append(("Available-Dictionary", ":" + base64.b64encode(d["hash"]).decode() + ":"))
            if chosen[0].get("id"):
                headers.append(("Dictionary-ID", _sf_string(chosen[0]["id"])))
        if chosen or self.codings_without_dictionary:
            codings += ", dcb, dcz"
        headers.append(("Accept-Encoding", codings))
        status, raw_headers, body = self.lab.request("GET", url, headers)
        fields = {k.lower(): v for k, v in raw_headers}
        named = chosen[0] if chosen else None
        uad = fields.get("use-as-dictionary")
        if uad is not None and status == 200 and not self.plain:
            self._register(path, fields, uad, body)
        return status, fields, body, named

    def _register(self, path: str, fields: dict, uad: str, body: bytes) -> None:
        lifetime = _lifetime(fields.get("cache-control", ""))
        if lifetime is None:
            return
        parsed = _parse_uad(uad)
        match = parsed["match"]
        pattern = re.compile(".*".join(re.escape(p) for p in match.split("*")))
        self.dictionaries = [d for d in self.dictionaries if (d["match"], d["dest"]) != (match, parsed["match-dest"])]
        now = time.time()
        self.dictionaries.append({"match": match, "pattern": pattern, "dest": parsed["match-dest"],
                                  "id": parsed.get("id"), "bytes": body, "hash": hashlib.sha256(body).digest(),
                                  "fetched": now, "expires": now + lifetime})

    def decode(self, fields: dict, body: bytes, named: dict | None) -> bytes:
        coding = fields.get("content-encoding", "identity")
        if coding in ("dcz", "dcb"):
            if named is None:
                raise ValueError(f"{coding} response but no dictionary was named")
            header = body[8:40] if coding == "dcz" else body[4:36]
            if header != named["hash"]:
                raise ValueError(f"{coding} header names {header.hex()}, the request named {named['hash'].hex()}")
            if coding == "dcz":
                return decoders.dcz_with_python_zstandard(body, named["bytes"])
            return decoders.dcb_with_brotli_cli(body, named["bytes"], self.brotli_cli)
        return decoders.decode_plain(body, coding, self.brotli_cli)

    def report(self, plan: dict, step: dict, value: dict) -> None:
        status, _, body = self.lab.request("POST", plan["reportURL"].replace("{step}", step["id"]),
                                           [("Content-Type", "application/json")], json.dumps(value).encode())
        assert status == 200, body

    def run(self, plan: dict) -> dict:
        for step in plan["steps"]:
            kind = step["kind"]
            if kind == "wait":
                time.sleep(step["seconds"])
            elif kind == "probe":
                for i in range(min(step["maxTries"], 1)):
                    self.get(step["url"] + f"?try={i}", step["destination"])
                    if self.lab.json(step["readyURL"])["ready"]:
                        break
                    time.sleep(step["intervalMilliseconds"] / 1000)
            elif kind in ("fetch", "page"):
                dest = "document" if kind == "page" else step["destination"]
                status, fields, body, named = self.get(step["url"], dest, step["id"])
                try:
                    decoded = self.decode(fields, body, named)
                    value = {"sha256": hashlib.sha256(decoded).hexdigest()}
                except (ValueError, AssertionError, Exception) as e:  # noqa: B014 - every decode failure
                    value = {"sha256": hashlib.sha256(body).hexdigest()} if self.render_undecodable else {"error": str(e)}
                if step["id"] in self.wrong_sha_for:
                    value = {"sha256": hashlib.sha256(b"not what was sent").hexdigest()}
                if step["report"]:
                    self.report(plan, step, value)
                if step["followLinks"]:
                    for link in re.findall(r'<([^>]+)>\s*;\s*rel="?compression-dictionary"?', fields.get("link", "")):
                        self.get(urllib.parse.urljoin(step["url"], link), "")
            else:
                raise AssertionError(f"unknown step kind {kind}")
        return self.lab.json(plan["resultsURL"])
