"""bench/memory: resident memory of dcserve under per-user live versions, against its memory budget.
See `run` for the method and targets.

Environment: USERS (2000), VERSIONS (10), ARTICLES (133: ~46 KB per document), CONNECTIONS (16),
IDLE_SECONDS (75: how long RSS is sampled after the traffic stops), MEMORY_BYTES (server.memoryBytes;
default: dcserve's), STORE_BYTES (store.maxBytes, 512 MiB: covers the working set of 2,000 users × 2
versions), OUT (output directory, default bench/memory/out), SMOKE=1 (bench/smoke: checks the bodies and
the deltas only), DCSERVE_BIN.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import benchlib  # noqa: E402
import userload  # noqa: E402
from benchlib import Process, free_port  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
USERS = int(os.environ.get("USERS", "2000"))
VERSIONS = int(os.environ.get("VERSIONS", "10"))
ARTICLES = int(os.environ.get("ARTICLES", "133"))
CONNECTIONS = int(os.environ.get("CONNECTIONS", "16"))
IDLE_SECONDS = int(os.environ.get("IDLE_SECONDS", "75"))
MEMORY_BYTES = os.environ.get("MEMORY_BYTES")
STORE_BYTES = int(os.environ.get("STORE_BYTES", str(512 << 20)))
OUT = os.environ.get("OUT", os.path.join(HERE, "out"))
SMOKE = os.environ.get("SMOKE") == "1"  # bench/smoke: verification and deltas only, no memory targets
LIFETIME = "max-age=0, stale-while-revalidate=86400"
MIB = 1 << 20


def build_upstream(work: str) -> str:
    binary = os.path.join(work, "feed_upstream")
    subprocess.run(["cc", "-O2", "-pthread", "-D_GNU_SOURCE", os.path.join(benchlib.ROOT, "bench/live/feed_upstream.c"),
                    "-o", binary, "-lcrypto"], check=True)
    return binary


def dcserve_config(work: str, upstream_port: int, admin_port: int, store_bytes: int, memory_bytes: str | None) -> str:
    server = {"host": "127.0.0.1", "accessLog": False, "decisionHeader": True}
    if memory_bytes:
        server["memoryBytes"] = int(memory_bytes)
    config = {
        "server": server,
        "store": {"path": os.path.join(work, "store"), "maxBytes": store_bytes},
        "admin": {"enabled": True, "port": admin_port},
        "compression": {"precompress": False},
        "upstreams": {"names": ["feed"], "feed": {"servers": [f"http://127.0.0.1:{upstream_port}"], "maxIdleConnections": 64}},
        "routes": {"names": ["feed"], "feed": {"prefix": "/", "upstream": "feed"}},
        "dictionaries": {"rules": ["calendar"],
                         "calendar": {"match": "/latest_news/*", "upstreamVersions": 2, "lifetime": LIFETIME,
                                      "partition": {"header": "Authorization"}}},
    }
    path = os.path.join(work, "dcserve.json")
    with open(path, "w") as f:
        json.dump(config, f)
    return path


def metrics(admin_port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{admin_port}/metrics", timeout=10).read().decode()
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(dcserve_memory_\w+|dcserve_live_events_total|dcserve_live_store_\w+)\{?([^}]*)\}? ([\d.e+]+)$", line)
        if m:
            out[f"{m.group(1)}{{{m.group(2)}}}"] = float(m.group(3))
    return out


def smaps(pid: int) -> None:
    """Prints the process's resident memory by mapping kind (diagnostics: SMAPS=1)."""
    rss: dict[str, int] = {}
    name = ""
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            parts = line.split()
            if re.match(r"^[0-9a-f]+-[0-9a-f]+$", parts[0]):
                name = parts[5] if len(parts) > 5 else "[anon]"
            elif parts[0] == "Rss:":
                rss[name] = rss.get(name, 0) + int(parts[1])
    for n, kib in sorted(rss.items(), key=lambda x: -x[1])[:8]:
        print(f"  smaps {kib / 1024:8.1f} MiB {n}")
    print(f"  threads: {len(os.listdir(f'/proc/{pid}/task'))}")


class Sampler:
    """RSS of `pid` every second, on a thread, with a mark per phase."""

    def __init__(self, process: Process):
        self.process = process
        self.samples: list[tuple[float, float]] = []  # (seconds since start, MiB)
        self.marks: list[tuple[float, str]] = []
        self.start = time.monotonic()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def now(self) -> float:
        return time.monotonic() - self.start

    def loop(self) -> None:
        while not self.stopped.is_set():
            self.samples.append((self.now(), self.process.rss_kib() / 1024))
            self.stopped.wait(1.0)

    def mark(self, label: str) -> None:
        self.marks.append((self.now(), label))

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()


def svg(path: str, samples: list[tuple[float, float]], marks: list[tuple[float, str]], lines: list[tuple[float, str]],
        title: str) -> None:
    """A line plot of RSS (MiB) over time, with vertical phase marks and horizontal reference lines."""
    w, h, left, right, top, bottom = 900, 420, 70, 20, 40, 50
    t_max = max(t for t, _ in samples) or 1
    y_max = max([m for _, m in samples] + [v for v, _ in lines]) * 1.1 or 1
    x = lambda t: left + (w - left - right) * t / t_max  # noqa: E731
    y = lambda v: h - bottom - (h - top - bottom) * v / y_max  # noqa: E731
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
             f'<rect width="{w}" height="{h}" fill="white"/>',
             f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>',
             f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" stroke="black"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="black"/>',
             f'<text x="{w / 2}" y="{h - 10}" text-anchor="middle">seconds</text>',
             f'<text x="15" y="{h / 2}" transform="rotate(-90 15 {h / 2})" text-anchor="middle">RSS, MiB</text>']
    step = max(1, int(y_max / 8 / 50) * 50) if y_max > 100 else 10
    v = 0
    while v <= y_max:
        parts.append(f'<text x="{left - 5}" y="{y(v) + 4}" text-anchor="end">{v}</text>')
        parts.append(f'<line x1="{left}" y1="{y(v)}" x2="{w - right}" y2="{y(v)}" stroke="#eee"/>')
        v += step
    t_step = max(10, int(t_max / 10 / 10) * 10)
    t = 0
    while t <= t_max:
        parts.append(f'<text x="{x(t)}" y="{h - bottom + 16}" text-anchor="middle">{t}</text>')
        t += t_step
    for value, label in lines:
        parts.append(f'<line x1="{left}" y1="{y(value)}" x2="{w - right}" y2="{y(value)}" stroke="#c33" stroke-dasharray="6,4"/>')
        parts.append(f'<text x="{w - right - 4}" y="{y(value) - 4}" text-anchor="end" fill="#c33">{label}</text>')
    for t, label in marks:
        parts.append(f'<line x1="{x(t)}" y1="{top}" x2="{x(t)}" y2="{h - bottom}" stroke="#888" stroke-dasharray="2,3"/>')
        parts.append(f'<text x="{x(t) + 3}" y="{top + 12}" fill="#555">{label}</text>')
    points = " ".join(f"{x(t):.1f},{y(m):.1f}" for t, m in samples)
    parts.append(f'<polyline fill="none" stroke="#2664c4" stroke-width="2" points="{points}"/>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts))


def main() -> int:
    os.makedirs(OUT, exist_ok=True)
    work = tempfile.mkdtemp(prefix="bench-memory-")
    binary = build_upstream(work)
    up_port, admin_port = free_port(), free_port()
    config = dcserve_config(work, up_port, admin_port, STORE_BYTES, MEMORY_BYTES)
    print(f"bench/memory  {USERS} users x {VERSIONS} versions of a per-user document of {ARTICLES} articles, "
          f"{CONNECTIONS} connections, rule upstreamVersions 2 + partition; store.maxBytes {STORE_BYTES // MIB} MiB; "
          f"{os.cpu_count()} cores; dcserve {benchlib.DCSERVE}")
    failures: list[str] = []
    with Process([binary, str(up_port)], up_port) as _upstream, benchlib.dcserve(["--config", config]) as dc:
        time.sleep(1)
        before = metrics(admin_port)
        budget = before.get('dcserve_memory_budget_bytes{consumer="total"}')
        budget_mib = budget / MIB if budget else float(MEMORY_BYTES or 512 * MIB) / MIB
        sampler = Sampler(dc)
        start_rss = dc.rss_kib() / 1024
        sampler.mark("traffic")

        def on_round(v: int, seconds: float) -> None:
            print(f"  round {v:2}: {USERS / seconds:7.0f} req/s, RSS {dc.rss_kib() / 1024:7.1f} MiB", flush=True)
            if v == 2:
                sampler.mark("warm")

        t0 = time.monotonic()
        tally = asyncio.run(userload.run(dc.port, USERS, VERSIONS, ARTICLES, CONNECTIONS, on_round=on_round))
        traffic_seconds = time.monotonic() - t0
        warm_at = next((t for t, label in sampler.marks if label == "warm"), sampler.marks[0][0])
        stop_at = sampler.now()
        sampler.mark("stop")
        during = metrics(admin_port)
        if os.environ.get("SMAPS") == "1":
            smaps(dc.proc.pid)
        deadline = time.monotonic() + IDLE_SECONDS
        back_at = None
        while time.monotonic() < deadline:
            time.sleep(1)
            if back_at is None and dc.rss_kib() / 1024 <= 1.5 * start_rss:
                back_at = sampler.now() - stop_at
        sampler.stop()
        idle = metrics(admin_port)

    busy = [m for t, m in sampler.samples if warm_at <= t <= stop_at]
    peak = max(m for t, m in sampler.samples if t <= stop_at)
    after = [m for t, m in sampler.samples if t > stop_at]
    plot = os.path.join(OUT, "rss.svg")
    svg(plot, sampler.samples, sampler.marks, [(budget_mib + 100, f"budget + 100 MiB ({budget_mib + 100:.0f})"),
                                               (1.5 * start_rss, f"1.5x start ({1.5 * start_rss:.0f})")],
        f"dcserve RSS: {USERS} users x {VERSIONS} versions of {ARTICLES} articles, budget {budget_mib:.0f} MiB")
    with open(os.path.join(OUT, "rss.csv"), "w") as f:
        f.write("seconds,rss_mib\n" + "".join(f"{t:.1f},{m:.1f}\n" for t, m in sampler.samples))

    requests = tally.requests
    delta_share = tally.deltas / max(tally.returning, 1)
    print(f"traffic: {requests} requests in {traffic_seconds:.1f} s ({requests / traffic_seconds:.0f} req/s), "
          f"{tally.verified} bodies verified (independent decoders, SHA-256 = upstream's), {len(tally.errors)} errors")
    for e in tally.errors[:10]:
        print("  error:", e)
    print(f"returning users given a delta: {tally.deltas}/{tally.returning} = {delta_share * 100:.1f}% (target >= 95%); "
          f"advertised {tally.advertised}/{requests}; no delta because: {tally.misses or '-'}")
    over = during.get('dcserve_live_events_total{event="overBudget",rule="calendar"}', 0)
    print(f"live versions refused over budget: {over:.0f}; store writes: "
          + ", ".join(f"{k.split('outcome=')[-1].strip(chr(34) + '}')} {v:.0f}" for k, v in sorted(during.items())
                      if k.startswith("dcserve_live_store_writes_total")))
    print(f"RSS: start {start_rss:.1f} MiB, peak {peak:.1f} MiB, after warm-up {min(busy, default=0):.1f}..{max(busy, default=0):.1f} MiB; "
          f"budget {budget_mib:.0f} MiB (+100 = {budget_mib + 100:.0f})")
    if busy:
        half = len(busy) // 2
        first, second = max(busy[:half] or busy), max(busy[half:] or busy)
        print(f"  flat after warm-up: max of first half {first:.1f} MiB, of second half {second:.1f} MiB "
              f"({(second - first) / max(first, 1) * 100:+.1f}%)")
        if second > first * 1.10 + 10 and not SMOKE:
            failures.append("RSS still growing after warm-up")
    print(f"after traffic stops: {'back to <= 1.5x start (' + format(1.5 * start_rss, '.0f') + ' MiB) after ' + format(back_at, '.0f') + ' s' if back_at is not None else 'NOT back to 1.5x start'}"
          f" (last {after[-1] if after else 0:.1f} MiB)")
    print("memory by consumer (budget / used at the end of the traffic / idle), MiB:")
    for consumer in ("dictionaries", "variants", "responseMemo", "staticBodies", "storeCache", "liveIndex", "unmanaged", "total"):
        b = during.get(f'dcserve_memory_budget_bytes{{consumer="{consumer}"}}', 0) / MIB
        u = during.get(f'dcserve_memory_used_bytes{{consumer="{consumer}"}}', 0) / MIB
        i = idle.get(f'dcserve_memory_used_bytes{{consumer="{consumer}"}}', 0) / MIB
        print(f"  {consumer:14} {b:8.1f} {u:8.1f} {i:8.1f}")
    print(f"plot: {plot}")
    if tally.errors:
        failures.append(f"{len(tally.errors)} bodies failed verification or status")
    if tally.verified != requests:
        failures.append("not every body verified")
    if peak > budget_mib + 100 and not SMOKE:
        failures.append(f"peak RSS {peak:.0f} MiB above budget + 100 MiB")
    if not SMOKE and (back_at is None or back_at > 60):
        failures.append("RSS not back to 1.5x its start-up value within a minute")
    if delta_share < 0.95:
        failures.append(f"deltas for {delta_share * 100:.1f}% of returning users (< 95%)")
    shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print("MISSED:", f)
    print("ALL TARGETS MET" if not failures else f"{len(failures)} target(s) missed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
