"""bench/tls: dcserve vs nginx over TLS 1.3 with the same certificate (EC P-256, made here with openssl).

1. full handshakes/s: `openssl s_time -new` (4 clients in parallel), a new connection and a full
   TLS 1.3 handshake (ECDHE + certificate signature) per GET;
2. resumed handshakes/s: wrk with `Connection: close` (a new connection per request; wrk resumes
   sessions, so these are PSK resumptions: dcserve's own counters showed ~98% resumed);
3. keep-alive req/s: wrk -c 64 over TLS on one small file;
4. the same over plain HTTP on the same server process, whose plain response path matches its TLS one
   (dcserve writes the small file inline; nginx's plain listener has sendfile off, as nginx always
   has under TLS), so "TLS cost" = TLS minus plain CPU per request is what TLS alone adds.
Runs BENCH_ROUNDS (default 2) rounds, alternating which server goes first; prints the means side by
side, the ratio dcserve/nginx (target >= 0.8), and each server's CPU time per request.
"""
from __future__ import annotations

import os
import subprocess
import sys
import re
import statistics
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import benchlib  # noqa: E402

SECONDS = int(os.environ.get("BENCH_SECONDS", "10"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "2"))


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
    servers = {
        "dcserve": lambda: benchlib.dcserve(["--root", site, "--store", os.path.join(work, "store")], ssl=tls),
        "nginx": lambda: benchlib.nginx(site, workers=2, ssl=tls),
    }
    # Rounds alternate which server goes first, so neither always runs on a warmer (or busier) machine.
    runs: dict[str, dict[str, list[dict]]] = {name: {"full": [], "handshakes": [], "keepalive": [], "plain": []}
                                              for name in servers}
    for round_index in range(ROUNDS):
        order = list(servers) if round_index % 2 == 0 else list(reversed(servers))
        for name in order:
            with servers[name]() as server:
                url = f"https://127.0.0.1:{server.port}/index.html"
                benchlib.wrk(url, connections=16, seconds=2)  # warm-up
                runs[name]["full"].append(full_handshakes(server.port, SECONDS))
                runs[name]["handshakes"].append(
                    benchlib.wrk(url, connections=32, seconds=SECONDS, headers={"Connection": "close"}, server=server))
                runs[name]["keepalive"].append(benchlib.wrk(url, connections=64, seconds=SECONDS, server=server))
                runs[name]["plain"].append(benchlib.wrk(f"http://127.0.0.1:{server.plain_port}/index.html",
                                                        connections=64, seconds=SECONDS, server=server))

    def mean(name: str, key: str, field: str) -> float:
        return statistics.mean(r[field] for r in runs[name][key])

    print(f"bench/tls  ({SECONDS} s per run, {ROUNDS} alternating rounds, means; TLS 1.3, ECDSA P-256; wrk -t 2)")
    print(f"{'':28}{'dcserve':>12}{'nginx':>12}{'ratio':>8}")
    for key, label in (("full", "full handshakes/s (s_time)"), ("handshakes", "resumed handshakes/s (wrk)"),
                       ("keepalive", "keep-alive req/s (-c 64)"), ("plain", "plain HTTP keep-alive req/s")):
        d, n = mean("dcserve", key, "rps"), mean("nginx", key, "rps")
        print(f"{label:28}{d:12.0f}{n:12.0f}{d / n:8.2f}   (runs: "
              + ", ".join(f"{r['rps']:.0f}/{m['rps']:.0f}" for r, m in zip(runs["dcserve"][key], runs["nginx"][key])) + ")")
        if key != "full":
            print(f"{'  p99 latency ms':28}{mean('dcserve', key, 'p99_ms'):12.2f}{mean('nginx', key, 'p99_ms'):12.2f}")
            dc, nc = mean("dcserve", key, "cpu_us"), mean("nginx", key, "cpu_us")
            print(f"{'  server cpu us/request':28}{dc:12.1f}{nc:12.1f}{dc / nc:8.2f}")
    dc, nc = (mean(name, "keepalive", "cpu_us") - mean(name, "plain", "cpu_us") for name in ("dcserve", "nginx"))
    print(f"{'TLS cost cpu us/request':28}{dc:12.1f}{nc:12.1f}   (keep-alive TLS minus plain HTTP)")
    for name, by_key in runs.items():
        for key, results in by_key.items():
            for r in results:
                if r["non2xx"]:
                    print(f"  {name} {key}: {r['non2xx']} non-2xx responses")
                for line in r["raw"].splitlines():
                    if "Socket errors" in line:
                        print(f"  {name} {key}: {line.strip()}")


if __name__ == "__main__":
    main()
