"""bench/proxy: dcserve and nginx as reverse proxies in front of one upstream (nginx serving static
files), measured with wrk in alternating rounds. See `run` for the method and the target.

Environment: DURATION (seconds per wrk run, default 10), ROUNDS (default 3), CONNECTIONS (64), FLOOR (1: also
measure `proxy-floor`, the server and client cores under a bare forwarding handler, in the same rounds; a row
"floor" per file compares it with nginx the same way).
The front servers: dcserve with one upstream and one route `/` (access log off, 2 event loops, its upstream pool
per event loop), nginx with 2 workers, `proxy_pass` to an `upstream` block with `keepalive 64`,
HTTP/1.1 and `Connection: ""` (its standard keep-alive pool), proxy buffering at its defaults.
The upstream: nginx, 1 worker, static files 1k.bin and 100k.bin (random bytes: nothing compresses,
and wrk sends no Accept-Encoding, so both proxies relay identity bodies). "up us dc/ng": the upstream's CPU per
request behind each front (it must not be the bottleneck). wrk is not pinned, for either front.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import benchlib  # noqa: E402
from benchlib import Process, free_port, wrk  # noqa: E402

DURATION = int(os.environ.get("DURATION", "10"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
CONNECTIONS = int(os.environ.get("CONNECTIONS", "64"))
FLOOR = os.environ.get("FLOOR", "0") == "1"
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def nginx_proxy(upstream_port: int, workers: int = 2) -> Process:
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    prefix = tempfile.mkdtemp(prefix="bench-nginx-proxy-")
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


def dcserve_proxy(upstream_port: int, workdir: str) -> Process:
    config = {
        "server": {"host": "127.0.0.1", "accessLog": False, "eventLoops": 2},  # nginx: 2 workers
        "store": {"path": os.path.join(workdir, "store")},
        "site": {"root": workdir},
        "admin": {"enabled": False},
        "compression": {"precompress": False},
        "upstreams": {"names": ["api"], "api": {"servers": [f"http://127.0.0.1:{upstream_port}"],
                                                "maxIdleConnections": 64}},
        "routes": {"names": ["api"], "api": {"prefix": "/", "upstream": "api"}},
    }
    path = os.path.join(workdir, "dcserve-proxy.json")
    with open(path, "w") as f:
        json.dump(config, f)
    return benchlib.dcserve(["--config", path])


def floor_proxy(upstream_port: int) -> Process:
    port = free_port()
    return Process([os.path.join(ROOT, ".build", "release", "proxy-floor"), str(port), str(upstream_port), "2"], port)


def main() -> None:
    work = tempfile.mkdtemp(prefix="bench-proxy-")
    os.chmod(work, 0o755)  # the upstream nginx's workers (user nobody) must reach www/
    www = os.path.join(work, "www")
    os.makedirs(www)
    for name, size in [("1k.bin", 1024), ("100k.bin", 102400)]:
        with open(os.path.join(www, name), "wb") as f:
            f.write(os.urandom(size))
    print(f"bench/proxy  wrk -t2 -c{CONNECTIONS} -d{DURATION}s keep-alive, {ROUNDS} alternating rounds; "
          f"upstream nginx (1 worker, static files); fronts: dcserve vs nginx proxy_pass (2 workers, keepalive 64); "
          f"{os.cpu_count()} cores")
    print(f"{'file':28} {'dcserve r/s':>11} {'p99 ms':>7} {'cpu us':>7} {'nginx r/s':>10} {'p99 ms':>7} {'cpu us':>7}"
          f" {'r/s x':>6} {'p99 x':>6} {'cpu x':>6} {'up us dc/ng':>12}")
    with contextlib.ExitStack() as stack:
        upstream = stack.enter_context(benchlib.nginx(www, workers=1))
        dc = stack.enter_context(dcserve_proxy(upstream.port, work))
        ng = stack.enter_context(nginx_proxy(upstream.port))
        fl = stack.enter_context(floor_proxy(upstream.port)) if FLOOR else None
        fronts = [("dc", dc), ("ng", ng)] + ([("fl", fl)] if fl else [])
        for name in ["1k.bin", "100k.bin"]:
            expected = open(os.path.join(www, name), "rb").read()
            for key, server in [("upstream", upstream)] + fronts:
                with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/{name}", timeout=10) as r:
                    if r.status != 200 or r.read() != expected:
                        raise SystemExit(f"{key} does not serve {name} correctly")
            rows = []
            for round_ in range(ROUNDS):
                k = (round_ + 1) % len(fronts)  # a different front first each round
                order = fronts[k:] + fronts[:k]
                result = {}
                for key, server in order:
                    upstream_before = upstream.cpu_seconds()
                    r = wrk(f"http://127.0.0.1:{server.port}/{name}", connections=CONNECTIONS, seconds=DURATION,
                            server=server)
                    # The upstream's CPU per request behind this front (is it the bottleneck?).
                    r["up_us"] = (upstream.cpu_seconds() - upstream_before) / max(r["rps"] * DURATION, 1) * 1e6
                    if r["non2xx"]:
                        print(f"  warning: {key} answered {r['non2xx']} non-2xx responses", file=sys.stderr)
                    result[key] = r
                rows.append(result)
                show(f"{name} round {round_ + 1}", result["dc"], result["ng"])
                if fl:
                    show("  floor", result["fl"], result["ng"])
            mean = {k: {m: statistics.mean(r[k][m] for r in rows) for m in ("rps", "p99_ms", "cpu_us", "up_us")}
                    for k, _ in fronts}
            show(f"{name} MEAN of {ROUNDS}", mean["dc"], mean["ng"])
            if fl:
                show("  floor MEAN", mean["fl"], mean["ng"])
        print(f"RSS after the runs: dcserve {dc.rss_kib() / 1024:.1f} MiB")
    shutil.rmtree(work, ignore_errors=True)


def show(label: str, d: dict, n: dict) -> None:
    print(f"{label:28} {d['rps']:11.0f} {d['p99_ms']:7.2f} {d['cpu_us']:7.1f} {n['rps']:10.0f} {n['p99_ms']:7.2f} "
          f"{n['cpu_us']:7.1f} {d['rps'] / n['rps']:5.2f}x {d['p99_ms'] / n['p99_ms']:5.2f}x {d['cpu_us'] / n['cpu_us']:5.2f}x"
          f" {d['up_us']:5.1f}/{n['up_us']:5.1f}",
          flush=True)


if __name__ == "__main__":
    main()
