"""bench/history: history dictionaries on real conversational text.

Starts the example API (examples/api, uvicorn) and dcserve (release) in front of it with a history rule
on /api/chats/:chat/* partitioned by Authorization, creates a fresh alice+bob chat, and replays
`--messages` lines of chatterbot-corpus conversations as alternating posts. After every `--every`
posts, alice's client fetches `messages?since=<last id it has>` through dcserve the way an RFC 9842
client does: it offers its current history dictionary (Available-Dictionary, Dictionary-ID), accepts
dcz/dcb/br/gzip, and when a response carries `Link: <…>; rel="compression-dictionary"` to a dictionary
it does not hold, fetches it (offering its current one when the URL is in that one's scope: the new
dictionary then comes delta-coded). Every body is decoded (zstd with the raw dictionary, brotli CLI)
and checked against the identity body.

Totals: the identity bodies encoded locally with gzip -6, brotli -q 11 (the brotli CLI) and zstd -19
(Python zstandard), against the body bytes dcserve actually sent (message fetches + dictionary
downloads). Bodies only; headers are the same order of size in every case and left out.
"""
from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import http.client
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from benchlib import DCSERVE, ROOT, Process, free_port  # noqa: E402

import zstandard  # noqa: E402

BROTLI = os.path.join(ROOT, ".deps/brotli/bin/brotli")
LINK_RE = re.compile(r'<([^>]+)>;\s*rel="compression-dictionary"')


def corpus_lines(directory: str) -> list[str]:
    """Every statement of every english conversation, in file order (a minimal reader for the
    corpus's YAML: `- - first` starts a conversation, `  - next` continues it)."""
    lines = []
    for path in sorted(pathlib.Path(directory).glob("*.yml")):
        for raw in path.read_text(encoding="utf-8").splitlines():
            m = re.match(r"^(?:- - |  - )(.*)$", raw)
            if m:
                text = m.group(1).strip().strip("'\"")
                if text:
                    lines.append(text)
    return lines


def brotli11(data: bytes) -> int:
    return len(subprocess.run([BROTLI, "-q", "11", "-c"], input=data, capture_output=True, check=True).stdout)


def brotli_decode(body: bytes, dictionary: bytes | None) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        args = [BROTLI, "-d", "-c"]
        if dictionary is not None:
            p = os.path.join(d, "dict")
            open(p, "wb").write(dictionary)
            args += ["-D", p]
        return subprocess.run(args, input=body, capture_output=True, check=True).stdout


def decode(body: bytes, coding: str | None, dictionary: bytes | None) -> bytes:
    if coding in (None, "identity"):
        return body
    if coding == "gzip":
        return gzip.decompress(body)
    if coding == "br":
        return brotli_decode(body, None)
    if coding == "zstd":
        return zstandard.ZstdDecompressor().decompressobj().decompress(body)
    if coding == "dcz":
        assert body[:8] == b"\x5e\x2a\x4d\x18\x20\x00\x00\x00" and body[8:40] == hashlib.sha256(dictionary).digest()
        d = zstandard.ZstdCompressionDict(dictionary, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
        return zstandard.ZstdDecompressor(dict_data=d, max_window_size=1 << 27).decompressobj().decompress(body[40:])
    if coding == "dcb":
        assert body[:4] == b"\xff\x44\x43\x42" and body[4:36] == hashlib.sha256(dictionary).digest()
        return brotli_decode(body[36:], dictionary)
    raise AssertionError(f"unexpected coding {coding}")


class Client:
    """alice's RFC 9842 client: one history dictionary at a time (the newest it fetched)."""

    def __init__(self, port: int, token: str):
        self.port, self.token = port, token
        self.dictionary: bytes | None = None
        self.match: re.Pattern | None = None
        self.dictionary_id: str | None = None
        self.sent_fetch = 0
        self.sent_dictionaries = 0
        self.dictionary_downloads = 0
        self.codings: dict[str, int] = {}

    def request(self, path: str, method: str = "GET", body: bytes | None = None):
        # Chromium's Accept-Encoding: dcb and dcz are added only when a dictionary is attached.
        headers = {"Authorization": f"Bearer {self.token}", "Accept-Encoding": "gzip, deflate, br, zstd"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self.dictionary is not None and self.match.fullmatch(path.split("?")[0]):
            headers["Accept-Encoding"] = "gzip, deflate, br, zstd, dcb, dcz"
            headers["Available-Dictionary"] = ":" + base64.b64encode(hashlib.sha256(self.dictionary).digest()).decode() + ":"
            if self.dictionary_id:
                headers["Dictionary-ID"] = json.dumps(self.dictionary_id)
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=headers)
            r = conn.getresponse()
            raw = r.read()
            return r.status, r.headers, raw, decode(raw, r.headers.get("Content-Encoding"), self.dictionary)
        finally:
            conn.close()

    def fetch_messages(self, path: str, expected: bytes) -> None:
        status, headers, raw, body = self.request(path)
        assert status == 200 and body == expected, (status, path)
        self.sent_fetch += len(raw)
        coding = headers.get("Content-Encoding") or "identity"
        self.codings[coding] = self.codings.get(coding, 0) + 1
        for value in headers.get_all("Link") or []:
            m = LINK_RE.search(value)
            if m and (self.dictionary is None or hashlib.sha256(self.dictionary).hexdigest() not in m.group(1)):
                self.fetch_dictionary(m.group(1))

    def fetch_dictionary(self, url: str) -> None:
        status, headers, raw, body = self.request(url)
        assert status == 200, (status, url)
        assert hashlib.sha256(body).hexdigest() in url
        self.sent_dictionaries += len(raw)
        self.dictionary_downloads += 1
        coding = "dictionary:" + (headers.get("Content-Encoding") or "identity")
        self.codings[coding] = self.codings.get(coding, 0) + 1
        fields = dict(x.split("=", 1) for x in re.split(r",\s*", headers["Use-As-Dictionary"]))
        pattern = json.loads(fields["match"])
        self.match = re.compile(re.escape(pattern).replace(r"\*", ".*"))
        self.dictionary_id = json.loads(fields["id"]) if "id" in fields else None
        self.dictionary = body


def run(args) -> dict:
    lines = corpus_lines(args.corpus)[args.offset:args.offset + args.messages]
    assert len(lines) == args.messages, f"corpus has {len(lines)} lines"
    api_port, port = free_port(), free_port()
    tmp = tempfile.mkdtemp(prefix="bench-history-")
    history = {"firstBuildBytes": args.first_build_bytes, "rebuildBytes": args.rebuild_bytes, "maxBytes": args.max_bytes,
               "windowBytes": max(args.max_bytes * 2, 65536)}
    config = {
        "server": {"host": "127.0.0.1", "port": port, "accessLog": False},
        "admin": {"enabled": False},
        "store": {"path": os.path.join(tmp, "store")},
        # Every message fetch is a new body, so only the on-the-fly ("fast") level ever applies: the
        # best levels on the request path unless --default-levels (dcz 3, dcb 5, zstd 3, br 5).
        "compression": {"precompress": False, "preference": args.preference.split(","),
                        **({} if args.default_levels else {"levels": {
                            "dcz": {"fast": 19}, "dcb": {"fast": 11}, "br": {"fast": 11}, "zstd": {"fast": 19}}})},
        "upstreams": {"names": ["api"], "api": {"servers": [f"http://127.0.0.1:{api_port}"]}},
        "routes": {"names": ["api"], "api": {"prefix": "/", "upstream": "api"}},
        "dictionaries": {"rules": ["chats"], "chats": {
            "match": "/api/chats/:chat/*", "partition": {"header": "Authorization"}, "history": history}},
    }
    open(os.path.join(tmp, "config.json"), "w").write(json.dumps(config))
    python = os.path.join(ROOT, ".deps/venv/bin/python")
    api = Process([python, os.path.join(ROOT, "examples/api/serve.py"), "--port", str(api_port)], api_port)
    server = None
    try:
        server = Process([DCSERVE, "serve", "--config", os.path.join(tmp, "config.json")], port)
        alice = Client(port, "alice")
        bob = Client(port, "bob")
        status, _, _, body = alice.request("/api/chats", "POST", json.dumps({"with": "bob"}).encode())
        assert status == 201
        chat = json.loads(body)["chat"]
        seen = 0
        identity = gzip6 = br11 = zstd19 = fetches = 0
        cctx = zstandard.ZstdCompressor(level=19)
        deadline = time.monotonic() + args.max_seconds
        for i, text in enumerate(lines):
            author = alice if i % 2 == 0 else bob
            status, _, _, _ = author.request(f"/api/chats/{chat}/messages", "POST", json.dumps({"text": text}).encode())
            assert status == 201
            if (i + 1) % args.every == 0 or i == len(lines) - 1:
                path = f"/api/chats/{chat}/messages?since={seen}"
                expected = direct(api_port, path)
                alice.fetch_messages(path, expected)
                identity += len(expected)
                gzip6 += len(gzip.compress(expected, compresslevel=6, mtime=0))
                br11 += brotli11(expected)
                zstd19 += len(cctx.compress(expected))
                fetches += 1
                seen = json.loads(expected)["last"]
                if args.settle:
                    time.sleep(args.settle)  # lets a queued build finish (it never blocks a response)
            assert time.monotonic() < deadline, "bench took too long"
        sent = alice.sent_fetch + alice.sent_dictionaries
        return {"messages": len(lines), "every": args.every, "fetches": fetches, "identity": identity, "gzip6": gzip6,
                "br11": br11, "zstd19": zstd19, "history_fetches": alice.sent_fetch, "history_dictionaries": alice.sent_dictionaries,
                "dictionary_downloads": alice.dictionary_downloads, "history_total": sent, "codings": alice.codings,
                "ratio_vs_br11": sent / br11}
    finally:
        if server:
            server.stop()
        api.stop()


def direct(api_port: int, path: str) -> bytes:
    conn = http.client.HTTPConnection("127.0.0.1", api_port, timeout=30)
    try:
        conn.request("GET", path, headers={"Authorization": "Bearer alice"})
        r = conn.getresponse()
        return r.read()
    finally:
        conn.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", required=True, help="directory of chatterbot-corpus english/*.yml (fetch_corpus.sh)")
    p.add_argument("--messages", type=int, default=300)
    p.add_argument("--offset", type=int, default=0, help="first corpus line used")
    p.add_argument("--every", default="5,3,2", help="alice fetches after this many posts (comma-separated: one table row each)")
    p.add_argument("--first-build-bytes", type=int, default=1024)
    p.add_argument("--rebuild-bytes", type=int, default=262144)
    p.add_argument("--preference", default="dcz,dcb,zstd,br,gzip", help="dcserve's compression.preference")
    p.add_argument("--max-bytes", type=int, default=16384)
    p.add_argument("--default-levels", action="store_true", help="dcserve's default on-the-fly levels, not the best ones")
    p.add_argument("--settle", type=float, default=0.05, help="seconds after each fetch (background builds)")
    p.add_argument("--rounds", type=int, default=2, help="runs over different corpus slices")
    p.add_argument("--max-seconds", type=float, default=600)
    args = p.parse_args()
    cadences = [int(x) for x in str(args.every).split(",")]
    base = args.offset
    rows = []
    for every in cadences:
        results = []
        for r in range(args.rounds):
            args.every, args.offset = every, base + r * args.messages
            res = run(args)
            results.append(res)
            print(json.dumps(res), flush=True)
        rows.append((every, {k: sum(r[k] for r in results) for k in (
            "identity", "gzip6", "br11", "zstd19", "history_total", "history_fetches", "history_dictionaries",
            "dictionary_downloads", "fetches")}))
    print(f"\n{args.rounds} rounds x {args.messages} messages (corpus lines {base}..{base + args.rounds * args.messages - 1}); "
          f"history: firstBuildBytes {args.first_build_bytes}, rebuildBytes {args.rebuild_bytes}, maxBytes {args.max_bytes}, "
          f"preference {args.preference}, {'default' if args.default_levels else 'best'} levels; bodies only, bytes summed over the rounds\n")
    print("| fetch every | fetches | gzip-6 | br-11 | zstd-19 | history (fetches + dictionaries, downloads) | history / br-11 |")
    print("|---|---|---|---|---|---|---|")
    for every, t in rows:
        print(f"| {every} posts | {t['fetches']} | {t['gzip6']} ({t['gzip6'] / t['br11']:.2f}x) | {t['br11']} | "
              f"{t['zstd19']} ({t['zstd19'] / t['br11']:.2f}x) | {t['history_total']} ({t['history_fetches']} + "
              f"{t['history_dictionaries']}, {t['dictionary_downloads']}) | **{t['history_total'] / t['br11']:.3f}x**"
              f"{'' if t['history_total'] <= 0.5 * t['br11'] else ' (target 0.5x not met)'} |")


if __name__ == "__main__":
    main()
