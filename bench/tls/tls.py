"""bench/tls: dcserve vs nginx over TLS 1.3 with the same certificate (EC P-256, made here with openssl).

1. full handshakes/s: `openssl s_time -new` (4 clients in parallel), a new connection and a full
   TLS 1.3 handshake (ECDHE + certificate signature) per GET;
2. resumed handshakes/s: wrk with `Connection: close` (a new connection per request; wrk resumes
   sessions, so these are PSK resumptions: dcserve's own counters showed ~98% resumed);
3. keep-alive req/s: wrk -c 64 over TLS on one small file.
Prints both servers side by side and the ratio dcserve/nginx (target >= 0.8).
"""
from __future__ import annotations

import os
import subprocess
import sys
import re
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import benchlib  # noqa: E402

SECONDS = int(os.environ.get("BENCH_SECONDS", "10"))


def certificate(directory: str) -> tuple[str, str]:
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True, timeout=60)
    return cert, key


def full_handshakes(port: int, seconds: int, clients: int = 4) -> dict:
    """Runs `clients` `openssl s_time -new` loops for `seconds`; connections per wall-clock second."""
    start = time.monotonic()
    procs = [subprocess.Popen(["openssl", "s_time", "-connect", f"127.0.0.1:{port}", "-new", "-time", str(seconds),
                               "-www", "/index.html"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
             for _ in range(clients)]
    total = 0
    for p in procs:
        out, _ = p.communicate(timeout=seconds + 60)
        m = re.search(r"(\d+) connections in [\d.]+s", out)
        total += int(m.group(1)) if m else 0
    return {"rps": total / (time.monotonic() - start), "p99_ms": float("nan"), "non2xx": 0, "raw": ""}


def main() -> None:
    work = tempfile.mkdtemp(prefix="bench-tls-")
    site = os.path.join(work, "site")
    os.makedirs(site)
    os.chmod(work, 0o755)  # nginx workers run as an unprivileged user
    with open(os.path.join(site, "index.html"), "wb") as f:
        f.write(b"<!doctype html><title>bench</title>" + b"<p>dcserve TLS benchmark page</p>\n" * 30)
    tls = certificate(work)
    results: dict[str, dict[str, dict]] = {}
    servers = {
        "dcserve": lambda: benchlib.dcserve(["--root", site, "--store", os.path.join(work, "store")], ssl=tls),
        "nginx": lambda: benchlib.nginx(site, workers=2, ssl=tls),
    }
    for name, start in servers.items():
        with start() as server:
            url = f"https://127.0.0.1:{server.port}/index.html"
            benchlib.wrk(url, connections=16, seconds=2)  # warm-up
            full = full_handshakes(server.port, SECONDS)
            hs = benchlib.wrk(url, connections=32, seconds=SECONDS, headers={"Connection": "close"}, server=server)
            ka = benchlib.wrk(url, connections=64, seconds=SECONDS, server=server)
            results[name] = {"full": full, "handshakes": hs, "keepalive": ka}
    print(f"bench/tls  ({SECONDS} s per run, TLS 1.3, ECDSA P-256; wrk -t 2)")
    print(f"{'':28}{'dcserve':>12}{'nginx':>12}{'ratio':>8}")
    for key, label in (("full", "full handshakes/s (s_time)"), ("handshakes", "resumed handshakes/s (wrk)"),
                       ("keepalive", "keep-alive req/s (-c 64)")):
        d, n = results["dcserve"][key], results["nginx"][key]
        print(f"{label:28}{d['rps']:12.0f}{n['rps']:12.0f}{d['rps'] / n['rps']:8.2f}")
        if key != "full":
            print(f"{'  p99 latency ms':28}{d['p99_ms']:12.2f}{n['p99_ms']:12.2f}")
            print(f"{'  server cpu us/request':28}{d['cpu_us']:12.1f}{n['cpu_us']:12.1f}{d['cpu_us'] / n['cpu_us']:8.2f}")
        if d["non2xx"] or n["non2xx"]:
            print(f"  non-2xx responses: dcserve {d['non2xx']}, nginx {n['non2xx']}")
    errors = [line for r in results.values() for v in r.values() for line in v["raw"].splitlines() if "Socket errors" in line]
    for line in errors:
        print("  " + line.strip())


if __name__ == "__main__":
    main()
