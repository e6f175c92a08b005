"""bench/transport — what dictionary transport buys on the wire, and what it costs the server.

1. Sizes per coding (identity, gzip-9, br-11, zstd-19, dcb-11, dcz-19) as dcserve sends them, for the
   example's app bundle v1 -> v2 and for a JSON endpoint (yesterday's -> today's catalog).
2. Requests/s of cached dcz responses from dcserve vs nginx serving the same bytes as a static file
   (wrk -c 64, keep-alive, the same request with its Accept-Encoding and Available-Dictionary fields
   to both, BENCH_ROUNDS alternating rounds in this one process; the ratio is of the means).
3. Cold-miss latency: a 1 MB resource never requested before, delta-compressed at the fast level
   against a 1 MB dictionary (dictionary already prepared, and fully cold).
"""
from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import random
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from benchlib import ROOT, dcserve, nginx, wrk  # noqa: E402

SECONDS = int(os.environ.get("BENCH_SECONDS", "10"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))


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


def big_json(seed: int, base: list | None = None, change: float = 0.05) -> tuple[bytes, list]:
    """About 1 MB of JSON records; with `base`, the same records with `change` of them edited."""
    rng = random.Random(seed)
    if base is None:
        words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
        records = [{"id": i, "sku": f"SKU-{rng.randrange(10**8):08d}", "name": " ".join(rng.choices(words, k=3)),
                    "price": rng.randrange(100, 100000), "stock": rng.randrange(0, 500),
                    "tags": rng.sample(words, 3)} for i in range(7000)]
    else:
        records = [dict(r) for r in base]
        for r in rng.sample(records, int(len(records) * change)):
            r["price"] = rng.randrange(100, 100000)
            r["stock"] = rng.randrange(0, 500)
    return json.dumps({"records": records}, indent=1).encode(), records


def main() -> None:
    work = tempfile.mkdtemp(prefix="bench-transport-")
    site = os.path.join(work, "site")
    for d in ("static", "api", "big"):
        os.makedirs(os.path.join(site, d))
    example = os.path.join(ROOT, "examples/site")
    v1 = open(os.path.join(example, "static/app.v1.js"), "rb").read()
    v2 = open(os.path.join(example, "static/app.v2.js"), "rb").read()
    today = open(os.path.join(example, "api/catalog.json"), "rb").read()
    catalog = json.loads(today)
    for p in catalog["products"][::7]:
        p["priceCents"] += 100
    catalog["version"] = "2026-11-21"
    yesterday = json.dumps(catalog, indent=1).encode()
    files = {"static/app.v1.js": v1, "static/app.v2.js": v2, "api/catalog.v1.json": yesterday,
             "api/catalog.v2.json": today}
    big1, records = big_json(1)
    bigs = [big1] + [big_json(k, records)[0] for k in range(2, 9)]
    for i, data in enumerate(bigs, 1):
        files[f"big/res.v{i}.json"] = data
    for name, data in files.items():
        with open(os.path.join(site, name), "wb") as f:
            f.write(data)

    def config(levels: dict) -> str:
        cfg = {"site": {"root": site}, "store": {"path": os.path.join(work, f"store-{len(os.listdir(work))}")},
               "compression": {"precompress": False, "levels": levels},
               "dictionaries": {"rules": ["bundle", "catalog", "big"],
                                "bundle": {"match": "/static/app.*.js"},
                                "catalog": {"match": "/api/catalog.*.json"},
                                "big": {"match": "/big/res.*.json"}}}
        path = os.path.join(work, f"config-{len(os.listdir(work))}.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        return path

    best = {c: {"fast": l, "best": l} for c, l in [("dcz", 19), ("dcb", 11), ("zstd", 19), ("br", 11), ("gzip", 9)]}

    # 1. Sizes (every coding encoded at its best level in the request path).
    print("== sizes (bytes as dcserve sends them)")
    print(f"{'resource':<26}{'identity':>9}{'gzip-9':>9}{'br-11':>9}{'zstd-19':>9}{'dcb-11':>9}{'dcz-19':>9}  dcz saves")
    with dcserve(["--config", config(best)]) as s:
        for label, old, new in [("app.v1.js -> app.v2.js", "/static/app.v1.js", "/static/app.v2.js"),
                                ("catalog.v1 -> catalog.v2", "/api/catalog.v1.json", "/api/catalog.v2.json")]:
            status, _, dictionary, _ = get(s.port, old, {})
            assert status == 200
            sizes = {}
            for coding in ["identity", "gzip", "br", "zstd", "dcb", "dcz"]:
                headers = {"Accept-Encoding": coding}
                if coding in ("dcb", "dcz"):
                    headers["Available-Dictionary"] = available(dictionary)
                status, h, body, _ = get(s.port, new, headers)
                assert status == 200 and h.get("content-encoding", "identity") == coding, (coding, h)
                sizes[coding] = len(body)
            saving = 100 * (1 - sizes["dcz"] / sizes["identity"])
            print(f"{label:<26}" + "".join(f"{sizes[c]:>9}" for c in ["identity", "gzip", "br", "zstd", "dcb", "dcz"])
                  + f"  {saving:.1f}% vs identity, {100 * (1 - sizes['dcz'] / sizes['br']):.1f}% vs br-11")

    # 2. Cached dcz responses vs nginx serving the same bytes.
    print(f"\n== cached dcz app.v2.js: wrk -c 64 -d {SECONDS}s, {ROUNDS} alternating rounds")
    with dcserve(["--config", config(best)]) as s:
        _, _, dictionary, _ = get(s.port, "/static/app.v1.js", {})
        # dcz only among the dictionary codings: with both at equal weight a small body gets the smaller
        # of the two (dcb here), and this part measures cached dcz against nginx serving those bytes.
        headers = {"Accept-Encoding": "gzip, br, zstd, dcz", "Available-Dictionary": available(dictionary)}
        _, h, dcz_body, _ = get(s.port, "/static/app.v2.js", headers)
        assert h["content-encoding"] == "dcz"
        static_root = tempfile.mkdtemp(prefix="bench-nginx-root-")
        with open(os.path.join(static_root, "app.v2.js.dcz"), "wb") as f:
            f.write(dcz_body)
        with nginx(static_root) as n:
            results = {"dcserve": [], "nginx": []}
            runs = {"dcserve": lambda: wrk(f"http://127.0.0.1:{s.port}/static/app.v2.js", seconds=SECONDS,
                                           headers=headers, server=s),
                    # The same request (fields included) to both: only the server differs.
                    "nginx": lambda: wrk(f"http://127.0.0.1:{n.port}/app.v2.js.dcz", seconds=SECONDS,
                                         headers=headers, server=n)}
            for round in range(ROUNDS):
                # Alternate which server goes first, so neither always runs on a warmer (or busier) machine.
                for name in (["dcserve", "nginx"] if round % 2 == 0 else ["nginx", "dcserve"]):
                    r = runs[name]()
                    assert r["non2xx"] == 0, r["raw"]
                    results[name].append(r)
        for name, runs in results.items():
            print(f"{name:<8} req/s " + "  ".join(f"{r['rps']:>9.0f}" for r in runs)
                  + f"   p99 ms " + "  ".join(f"{r['p99_ms']:.2f}" for r in runs)
                  + f"   cpu us/req " + "  ".join(f"{r['cpu_us']:.1f}" for r in runs))
        ratio = statistics.mean(r["rps"] for r in results["dcserve"]) / statistics.mean(r["rps"] for r in results["nginx"])
        cpu = statistics.mean(r["cpu_us"] for r in results["dcserve"]) / statistics.mean(r["cpu_us"] for r in results["nginx"])
        print(f"dcserve/nginx req/s ratio: {ratio:.2f}, cpu per request ratio: {cpu:.2f}  (body {len(dcz_body)} bytes)")

    # 3. Cold misses: 1 MB resources never requested before, 1 MB dictionary, fast level (dcz 3).
    print("\n== cold miss, 1 MB resource, 1 MB dictionary, dcz at the fast level (3)")
    with dcserve(["--config", config({})]) as s:
        _, _, dictionary, _ = get(s.port, "/big/res.v1.json", {})
        headers = {"Accept-Encoding": "dcz", "Available-Dictionary": available(dictionary)}
        status, h, body, first = get(s.port, "/big/res.v2.json", headers)
        assert h["content-encoding"] == "dcz"
        times = []
        for i in range(3, len(bigs) + 1):
            status, h, body, elapsed = get(s.port, f"/big/res.v{i}.json", headers)
            assert status == 200 and h["content-encoding"] == "dcz"
            times.append(elapsed * 1000)
        print(f"first request (dictionary prepared in it): {first * 1000:.1f} ms")
        print(f"cold misses, dictionary prepared: " + ", ".join(f"{t:.1f}" for t in times)
              + f" ms; median {statistics.median(times):.1f} ms (target <= 15 ms); delta {len(body)} bytes of {len(bigs[-1])}")


if __name__ == "__main__":
    main()
