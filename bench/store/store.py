"""bench/store — PostgreSQL dictionary store vs directory store (see ./run).

1. First delta on an instance that never saw the dictionary: instance A stores a fresh 1 MB
   dictionary; instance B (already running, connected to the same PostgreSQL) gets a request for a
   small page (and, separately, a 1 MB resource) with that dictionary's hash. B must learn the
   dictionary (notification), read it from PostgreSQL, verify it, prepare it and encode. Reported:
   client-side time of that first request, median over ROUNDS fresh dictionaries; the same on a
   directory-store instance whose store holds the dictionary on disk but never loaded it.
2. Steady state: cached dcz of app.v2.js (wrk -c 64, alternating rounds) on a postgres-store instance
   vs a directory-store instance serving the same files.
"""
from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from benchlib import ROOT, dcserve, wrk  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "7"))
WRK_ROUNDS = int(os.environ.get("BENCH_WRK_ROUNDS", "3"))
SECONDS = int(os.environ.get("BENCH_SECONDS", "5"))
SCRIPT = os.path.join(ROOT, "scripts/throwaway-postgres.sh")


def available(data: bytes) -> str:
    return ":" + base64.b64encode(hashlib.sha256(data).digest()).decode() + ":"


def get(port: int, path: str, headers: dict[str, str]) -> tuple[int, dict, bytes, float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    start = time.perf_counter()
    conn.request("GET", path, headers=headers)
    r = conn.getresponse()
    body = r.read()
    elapsed = time.perf_counter() - start
    conn.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, body, elapsed


def json_doc(seed: int, size: int) -> bytes:
    rng = random.Random(seed)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
    records, total = [], 0
    while total < size:
        rec = {"id": rng.randrange(10**9), "name": " ".join(rng.choice(words) for _ in range(4)),
               "price": rng.randrange(100000), "tags": [rng.choice(words) for _ in range(3)], "seed": seed}
        records.append(rec)
        total += len(json.dumps(rec))
    return json.dumps(records, indent=1).encode()[:size]


def mutate(data: bytes, seed: int, fraction: float = 0.03) -> bytes:
    rng = random.Random(seed)
    b = bytearray(data)
    for _ in range(int(len(b) * fraction / 8)):
        i = rng.randrange(len(b) - 8)
        b[i:i + 8] = b"%08d" % rng.randrange(10**8)
    return bytes(b)


def main() -> None:
    work = tempfile.mkdtemp(prefix="bench-store-")
    site = os.path.join(work, "site")
    os.makedirs(os.path.join(site, "static"))
    os.makedirs(os.path.join(site, "big"))
    example = os.path.join(ROOT, "examples/site")
    for n in ("app.v1.js", "app.v2.js"):
        shutil.copy(os.path.join(example, "static", n), os.path.join(site, "static", n))
    dicts, pages, bigs = [], [], []
    for i in range(ROUNDS * 2):
        d = json_doc(1000 + i, 1 << 20)
        dicts.append(d)
        pages.append(mutate(d[:16384], i))
        bigs.append(mutate(d, i))
        for name, data in ((f"big/dict.{i}.json", d), (f"big/page.{i}.json", pages[-1]), (f"big/res.{i}.json", bigs[-1])):
            with open(os.path.join(site, name), "wb") as f:
                f.write(data)

    pg_dir = os.path.join(ROOT, ".build/pg/bench")
    url = subprocess.run([SCRIPT, "start", pg_dir], capture_output=True, text=True, check=True, timeout=120).stdout.split()[-1]
    try:
        db = "bench_" + hashlib.sha1(work.encode()).hexdigest()[:10]
        subprocess.run(["runuser", "-u", "postgres", "--", "/usr/lib/postgresql/15/bin/psql", "-X", "-q", "-h", pg_dir,
                        "-p", open(os.path.join(pg_dir, "port")).read().strip(), "-U", "postgres", "-d", "postgres",
                        "-c", f"CREATE DATABASE {db} OWNER dcserve"], check=True, timeout=60)
        url = url.rsplit("/", 1)[0] + f"/{db}?sslmode=disable"

        def config(name: str, postgres: bool) -> str:
            store = {"path": os.path.join(work, f"store-{name}")}
            if postgres:
                store.update({"kind": "postgres", "postgres": {"url": url}})
            cfg = {"site": {"root": site}, "store": store, "compression": {"precompress": False}, "admin": {"enabled": False},
                   "dictionaries": {"rules": ["bundle", "big"],
                                    "bundle": {"match": "/static/app.*.js"},
                                    "big": {"resources": "/big/dict.*.json", "match": "/big/*"}}}
            path = os.path.join(work, f"config-{name}.json")
            with open(path, "w") as f:
                json.dump(cfg, f)
            return path

        # 1. Time to first delta.
        print(f"== first delta on an instance that never saw the 1 MB dictionary (median of {ROUNDS}; "
              f"client-side ms, dcz at the fast level)")
        # "first": a 16 KB page, the first request naming the dictionary (learn, read, verify, prepare,
        # encode); "1MB next": then a 1 MB resource against the now-loaded dictionary (encoding cost).
        results = {k: [] for k in ("pg first", "pg 1MB next", "dir first", "dir 1MB next")}
        with dcserve(["--config", config("a", True)]) as a, dcserve(["--config", config("b", True)]) as b:
            for i in range(ROUNDS):
                status, h, body, _ = get(a.port, f"/big/dict.{i}.json", {})
                assert status == 200 and "use-as-dictionary" in h, h
                time.sleep(0.1)  # the notification (delivery within a second is tested in test_pg_store.py)
                hdr = {"Accept-Encoding": "dcz", "Available-Dictionary": available(dicts[i])}
                try:
                    status, h, body, t = get(b.port, f"/big/page.{i}.json", hdr)
                except OSError:
                    print(open(b.log.name).read()[-3000:])
                    raise
                assert h.get("content-encoding") == "dcz", h
                results["pg first"].append(t * 1000)
                status, h, body, t = get(b.port, f"/big/res.{i}.json", hdr)
                assert h.get("content-encoding") == "dcz", h
                results["pg 1MB next"].append(t * 1000)
        # Directory store: dictionaries stored by a first process, measured on a fresh one (on disk, never loaded).
        directory = config("dir", False)
        with dcserve(["--config", directory]) as s:
            for i in range(ROUNDS, 2 * ROUNDS):
                assert get(s.port, f"/big/dict.{i}.json", {})[0] == 200
        with dcserve(["--config", directory]) as s:
            for i in range(ROUNDS, 2 * ROUNDS):
                hdr = {"Accept-Encoding": "dcz", "Available-Dictionary": available(dicts[i])}
                status, h, body, t = get(s.port, f"/big/page.{i}.json", hdr)
                assert h.get("content-encoding") == "dcz", h
                results["dir first"].append(t * 1000)
                status, h, body, t = get(s.port, f"/big/res.{i}.json", hdr)
                assert h.get("content-encoding") == "dcz", h
                results["dir 1MB next"].append(t * 1000)
        for name, times in results.items():
            print(f"{name:<13} median {statistics.median(times):7.2f} ms   runs " + " ".join(f"{t:.1f}" for t in times))
        print(f"target: first delta <= 20 ms for a 1 MB dictionary (postgres, 16 KB page): "
              f"{statistics.median(results['pg first']):.2f} ms")

        # 2. Steady state.
        print(f"\n== cached dcz app.v2.js: wrk -c 64 -d {SECONDS}s, {WRK_ROUNDS} alternating rounds")
        with dcserve(["--config", config("steady-pg", True)]) as p, dcserve(["--config", config("steady-dir", False)]) as d:
            servers = {"postgres": p, "directory": d}
            headers = {}
            for s in servers.values():
                _, _, v1, _ = get(s.port, "/static/app.v1.js", {})
                # dcz only: offered dcb too, dcserve sends whichever is smaller (dcb for this file).
                headers = {"Accept-Encoding": "gzip, br, zstd, dcz", "Available-Dictionary": available(v1)}
                _, h, _, _ = get(s.port, "/static/app.v2.js", headers)
                assert h["content-encoding"] == "dcz", h
            results = {k: [] for k in servers}
            for r in range(WRK_ROUNDS):
                for name in (["postgres", "directory"] if r % 2 == 0 else ["directory", "postgres"]):
                    s = servers[name]
                    out = wrk(f"http://127.0.0.1:{s.port}/static/app.v2.js", seconds=SECONDS, headers=headers, server=s)
                    assert out["non2xx"] == 0, out["raw"]
                    results[name].append(out)
            for name, runs in results.items():
                print(f"{name:<10} req/s " + "  ".join(f"{r['rps']:>9.0f}" for r in runs)
                      + "   cpu us/req " + "  ".join(f"{r['cpu_us']:.1f}" for r in runs))
            ratio = statistics.mean(r["rps"] for r in results["postgres"]) / statistics.mean(r["rps"] for r in results["directory"])
            print(f"postgres/directory req/s ratio: {ratio:.3f} (target >= 0.95)")
    finally:
        subprocess.run([SCRIPT, "stop", pg_dir], timeout=60)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
