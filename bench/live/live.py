"""bench/live: a live feed where every response is new. See `run` for the method.

1. Bytes per response: a client walks versions 1..K of its feed through dcserve, naming the version it
   holds; the dcz/dcb bodies are decoded with Python zstandard / the brotli CLI and compared with the
   upstream's body. Identity, gzip-6 (zlib; nginx's own gzip response size is shown too) and br-11 (the
   brotli CLI) are computed over the same versions.
2. Upstream alone with the same load (wrk, identity): its req/s must be well above both proxies'.
3. Alternating rounds, wrk -tN -cN (one connection per thread = one client reading its own feed, one
   new version per request): dcserve (client names the previous version; Chromium's Accept-Encoding)
   vs nginx proxy_pass + gzip on, gzip_comp_level 6 (client accepts gzip): req/s, p99, front-server CPU
   per request, and the bytes per response the clients received.

Environment: DURATION (s per wrk run, 10), ROUNDS (3), CLIENTS (32), VERSIONS (K, 30), DCSERVE_BIN.
"""
from __future__ import annotations

import base64
import gzip
import hashlib
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import benchlib  # noqa: E402
from benchlib import Process, free_port  # noqa: E402

import zstandard  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DURATION = int(os.environ.get("DURATION", "10"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
CLIENTS = int(os.environ.get("CLIENTS", "32"))
VERSIONS = int(os.environ.get("VERSIONS", "30"))
BROTLI = os.path.join(benchlib.ROOT, ".deps/brotli/bin/brotli")
LIFETIME = "max-age=0, stale-while-revalidate=86400"


def build_upstream(work: str) -> str:
    binary = os.path.join(work, "feed_upstream")
    subprocess.run(["cc", "-O2", "-pthread", "-D_GNU_SOURCE", os.path.join(HERE, "feed_upstream.c"), "-o", binary,
                    "-lcrypto"], check=True)
    return binary


def nginx_gzip_proxy(upstream_port: int, workers: int = 2) -> Process:
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    prefix = tempfile.mkdtemp(prefix="bench-nginx-live-")
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
    keepalive_requests 1000000;
    client_body_temp_path {prefix}/body; proxy_temp_path {prefix}/proxy; fastcgi_temp_path {prefix}/fcgi;
    uwsgi_temp_path {prefix}/uwsgi; scgi_temp_path {prefix}/scgi;
    upstream api {{ server 127.0.0.1:{upstream_port}; keepalive 64; keepalive_requests 1000000; }}
    gzip on;
    gzip_comp_level 6;
    gzip_types application/json;
    gzip_proxied any;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://api;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        }}
    }}
}}
""")
    return Process([binary, "-p", prefix, "-c", conf], port)


def dcserve_live_proxy(upstream_port: int, work: str) -> Process:
    config = {
        "server": {"host": "127.0.0.1", "accessLog": False},
        "store": {"path": os.path.join(work, "store")},
        "admin": {"enabled": False},
        "compression": {"precompress": False},
        "upstreams": {"names": ["feed"], "feed": {"servers": [f"http://127.0.0.1:{upstream_port}"],
                                                  "maxIdleConnections": 64}},
        "routes": {"names": ["feed"], "feed": {"prefix": "/", "upstream": "feed"}},
        "dictionaries": {"rules": ["feed"],
                         "feed": {"match": "/latest_news/*", "upstreamVersions": 2, "lifetime": LIFETIME}},
    }
    path = os.path.join(work, "dcserve-live.json")
    with open(path, "w") as f:
        json.dump(config, f)
    return benchlib.dcserve(["--config", path])


def get(port: int, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers=headers)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def br11(data: bytes) -> int:
    out = subprocess.run([BROTLI, "-c", "-q", "11", "-"], input=data, capture_output=True, check=True)
    return len(out.stdout)


def dcb_decode(body: bytes, dictionary: bytes) -> bytes:
    assert body[:4] == b"\xffDCB" and body[4:36] == hashlib.sha256(dictionary).digest()
    with tempfile.NamedTemporaryFile() as d, tempfile.NamedTemporaryFile() as b:
        d.write(dictionary)
        d.flush()
        b.write(body[36:])
        b.flush()
        return subprocess.run([BROTLI, "-d", "-c", "-D", d.name, b.name], capture_output=True, check=True).stdout


def measure_bytes(upstream: int, dc: int, ng: int) -> dict[str, float]:
    """Walks versions 1..VERSIONS of one feed through dcserve (naming the previous version) and nginx;
    returns mean bytes per response (versions 2..K) by coding."""
    sizes: dict[str, list[int]] = {k: [] for k in ("identity", "gzip-6", "nginx gzip", "br-11", "dcz", "dcb")}
    held = None
    for v in range(1, VERSIONS + 1):
        path = f"/latest_news/bytes?v={v}"
        _, uh, body = get(upstream, path, {})
        for coding in ("dcz", "dcb"):
            # The same version through dcserve for each coding (the second is a repeat of the version;
            # only its size is recorded, the first request of a version stored it).
            headers = {"Accept-Encoding": f"gzip, br, {coding}"}
            if held is not None:
                headers["Available-Dictionary"] = ":" + base64.b64encode(hashlib.sha256(held).digest()).decode() + ":"
            status, h, coded = get(dc, path, headers)
            assert status == 200, (status, h)
            if held is None:
                continue
            assert h.get("content-encoding") == coding, (v, coding, h)
            if coding == "dcz":
                decoded = zstandard.ZstdDecompressor(dict_data=zstandard.ZstdCompressionDict(
                    held, dict_type=zstandard.DICT_TYPE_RAWCONTENT)).decompress(coded[40:], max_output_size=1 << 24)
            else:
                decoded = dcb_decode(coded, held)
            assert decoded == body, f"version {v}: {coding} does not decode to the upstream's body"
            sizes[coding].append(len(coded))
        if held is not None:
            sizes["identity"].append(len(body))
            sizes["gzip-6"].append(len(gzip.compress(body, 6)))
            sizes["br-11"].append(br11(body))
            _, h, ngbody = get(ng, path, {"Accept-Encoding": "gzip"})
            assert h.get("content-encoding") == "gzip" and gzip.decompress(ngbody) == body
            sizes["nginx gzip"].append(len(ngbody))
        held = body
    return {k: statistics.mean(v) for k, v in sizes.items()}


def wrk_feed(port: int, mode: str, run: str, server: Process | None) -> dict:
    user_before, sys_before = server.cpu_split() if server else (0.0, 0.0)
    args = ["wrk", "-t", str(CLIENTS), "-c", str(CLIENTS), "-d", f"{DURATION}s", "--latency",
            "-s", os.path.join(HERE, "feed.lua"), f"http://127.0.0.1:{port}/", "--", mode, run]
    out = subprocess.run(args, capture_output=True, text=True, timeout=DURATION + 60).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[p99.group(2)]
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    feed = re.search(r"FEED responses=(\d+) dictionary_coded=(\d+) body_bytes=(\d+)", out)
    responses, coded, body_bytes = (int(x) for x in feed.groups())
    user_after, sys_after = server.cpu_split() if server else (0.0, 0.0)
    cpu = (user_after - user_before) + (sys_after - sys_before)
    cpu_us = cpu * 1e6 / max(requests, 1) if server else float("nan")
    kernel = (sys_after - sys_before) / cpu if cpu > 0 else float("nan")
    return {"rps": rps, "p99_ms": float(p99.group(1)) * scale, "cpu_us": cpu_us, "kernel": kernel,
            "non2xx": int(errors.group(1)) if errors else 0, "coded": coded / max(responses, 1),
            "bytes": body_bytes / max(responses, 1)}


def main() -> None:
    work = tempfile.mkdtemp(prefix="bench-live-")
    binary = build_upstream(work)
    up_port = free_port()
    print(f"bench/live  feed of ~50 KB JSON, one new article per request (every response new); "
          f"wrk -t{CLIENTS} -c{CLIENTS} (one client per connection, sequential), -d{DURATION}s, {ROUNDS} alternating rounds; "
          f"upstream: bench/live/feed_upstream.c; {os.cpu_count()} cores; dcserve {benchlib.DCSERVE}")
    with Process([binary, str(up_port)], up_port) as upstream, dcserve_live_proxy(up_port, work) as dc, \
            nginx_gzip_proxy(up_port) as ng:
        sizes = measure_bytes(up_port, dc.port, ng.port)
        print(f"bytes per response (mean of versions 2..{VERSIONS}, one client naming its previous version):")
        for k in ("identity", "gzip-6", "nginx gzip", "br-11", "dcb", "dcz"):
            print(f"  {k:12} {sizes[k]:9.0f}  {sizes[k] / sizes['gzip-6']:6.3f}x gzip-6")
        best_delta = min(sizes["dcz"], sizes["dcb"])
        print(f"  target delta <= 0.10x gzip-6: {best_delta / sizes['gzip-6']:.3f}x "
              f"{'MET' if best_delta <= 0.10 * sizes['gzip-6'] else 'MISSED'}")

        alone = wrk_feed(up_port, "identity", "up", upstream)
        print(f"upstream alone (identity, same load): {alone['rps']:.0f} req/s, {alone['cpu_us']:.0f} us CPU/request")

        print(f"{'round':14} {'dcserve r/s':>11} {'p99 ms':>7} {'cpu us':>7} {'B/resp':>7} {'coded':>6}"
              f" {'nginx r/s':>10} {'p99 ms':>7} {'cpu us':>7} {'B/resp':>7} {'r/s x':>6} {'cpu x':>6}")
        rows = []
        for round_ in range(ROUNDS):
            order = [("dc", dc, "delta"), ("ng", ng, "gzip")]
            if round_ % 2 == 0:
                order.reverse()
            result = {}
            for key, server, mode in order:
                r = wrk_feed(server.port, mode, f"r{round_}{key}", server)
                if r["non2xx"]:
                    print(f"  warning: {key} answered {r['non2xx']} non-2xx responses", file=sys.stderr)
                result[key] = r
            rows.append(result)
            show(f"round {round_ + 1}", result["dc"], result["ng"])
        mean = {k: {m: statistics.mean(r[k][m] for r in rows) for m in ("rps", "p99_ms", "cpu_us", "bytes", "coded", "kernel")}
                for k in ("dc", "ng")}
        show(f"MEAN of {ROUNDS}", mean["dc"], mean["ng"])
        ratio = mean["dc"]["rps"] / mean["ng"]["rps"]
        print(f"target req/s >= 1.0x nginx: {ratio:.2f}x {'MET' if ratio >= 1.0 else 'MISSED'}; "
              f"upstream alone {alone['rps'] / max(mean['dc']['rps'], mean['ng']['rps']):.1f}x the faster proxy")
        cpu_ratio = mean["dc"]["cpu_us"] / mean["ng"]["cpu_us"]
        print(f"target CPU per request <= 0.35x nginx: {cpu_ratio:.2f}x {'MET' if cpu_ratio <= 0.35 else 'MISSED'}; "
              f"req/s >= 1.6x nginx: {ratio:.2f}x {'MET' if ratio >= 1.6 else 'MISSED'}")
        print(f"kernel share of CPU: dcserve {mean['dc']['kernel'] * 100:.0f}% (aim < 20%), nginx {mean['ng']['kernel'] * 100:.0f}%")
        print(f"RSS after the runs: dcserve {dc.rss_kib() / 1024:.1f} MiB")
    shutil.rmtree(work, ignore_errors=True)


def show(label: str, d: dict, n: dict) -> None:
    print(f"{label:14} {d['rps']:11.0f} {d['p99_ms']:7.2f} {d['cpu_us']:7.1f} {d['bytes']:7.0f} {d['coded']:6.2f}"
          f" {n['rps']:10.0f} {n['p99_ms']:7.2f} {n['cpu_us']:7.1f} {n['bytes']:7.0f}"
          f" {d['rps'] / n['rps']:5.2f}x {d['cpu_us'] / n['cpu_us']:5.2f}x", flush=True)


if __name__ == "__main__":
    main()
