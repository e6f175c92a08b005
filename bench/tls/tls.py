"""bench/tls: dcserve vs nginx over TLS 1.3 with the same certificate (EC P-256, made here with openssl).

1. handshakes/s: wrk with `Connection: close`, so every request is a new TCP connection and a full
   TLS handshake (wrk does not resume sessions);
2. keep-alive req/s: wrk -c 64 over TLS on one small file.
Prints both servers side by side and the ratio dcserve/nginx (target >= 0.8).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import benchlib  # noqa: E402

SECONDS = int(os.environ.get("BENCH_SECONDS", "10"))


def certificate(directory: str) -> tuple[str, str]:
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True, timeout=60)
    return cert, key


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
            hs = benchlib.wrk(url, connections=32, seconds=SECONDS, headers={"Connection": "close"})
            ka = benchlib.wrk(url, connections=64, seconds=SECONDS)
            results[name] = {"handshakes": hs, "keepalive": ka}
    print(f"bench/tls  ({SECONDS} s per run, TLS 1.3, ECDSA P-256, wrk -t 2)")
    print(f"{'':28}{'dcserve':>12}{'nginx':>12}{'ratio':>8}")
    for key, label in (("handshakes", "handshakes/s (conn: close)"), ("keepalive", "keep-alive req/s (-c 64)")):
        d, n = results["dcserve"][key], results["nginx"][key]
        print(f"{label:28}{d['rps']:12.0f}{n['rps']:12.0f}{d['rps'] / n['rps']:8.2f}")
        print(f"{'  p99 latency ms':28}{d['p99_ms']:12.2f}{n['p99_ms']:12.2f}")
        if d["non2xx"] or n["non2xx"]:
            print(f"  non-2xx responses: dcserve {d['non2xx']}, nginx {n['non2xx']}")
    errors = [line for r in results.values() for v in r.values() for line in v["raw"].splitlines() if "Socket errors" in line]
    for line in errors:
        print("  " + line.strip())


if __name__ == "__main__":
    main()
