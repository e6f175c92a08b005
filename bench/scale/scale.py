"""bench/scale: one instance, many users, three versions each. See `run` for the method and targets.

Environment: USERS (100000), VERSIONS (3), ARTICLES (58: ~20 KB per document), CONNECTIONS (32),
VERIFY_EVERY (50: every 50th user's bodies are decoded and compared, and checked after the restart),
MEMORY_BYTES (server.memoryBytes, 1 GiB), STORE_BYTES (store.maxBytes, 5 GiB), SMOKE=1 (bench/smoke:
checks only), DCSERVE_BIN.
"""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import base64

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "memory"))
import benchlib  # noqa: E402
import userload  # noqa: E402
from benchlib import Process, free_port  # noqa: E402
from memory import Sampler, build_upstream, dcserve_config, metrics  # noqa: E402

USERS = int(os.environ.get("USERS", "100000"))
VERSIONS = int(os.environ.get("VERSIONS", "3"))
ARTICLES = int(os.environ.get("ARTICLES", "58"))
CONNECTIONS = int(os.environ.get("CONNECTIONS", "32"))
VERIFY_EVERY = int(os.environ.get("VERIFY_EVERY", "50"))
MEMORY_BYTES = int(os.environ.get("MEMORY_BYTES", str(1 << 30)))
STORE_BYTES = int(os.environ.get("STORE_BYTES", str(5 << 30)))
SMOKE = os.environ.get("SMOKE") == "1"
MIB = 1 << 20


def write_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            if line.startswith("write_bytes:"):
                return int(line.split()[1])
    return 0


def partition_of(secret: bytes, user: int) -> str:
    return hmac.new(secret, b"header:authorization\n" + f"Bearer u{user}".encode(), hashlib.sha256).hexdigest()


def stored(db: str, partition: str, available: str) -> bool:
    """Whether the store's database holds (partition, hash) — read by SQLite itself (WAL reader)."""
    digest = base64.b64decode(available.strip(":"))
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10) as c:
        return c.execute("SELECT 1 FROM records WHERE partition = ? AND hash = ?", (partition, digest)).fetchone() is not None


class CommitProbe:
    """Every 2 s during the load: one request of a probe user of its own (a new version), then the time
    until its record is in the store's database (read with Python's sqlite3): the commit delay."""

    def __init__(self, port: int, db: str, secret_path: str):
        self.port, self.db, self.secret_path = port, db, secret_path
        self.delays: list[float] = []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self) -> None:
        import http.client
        n = 0
        while not self.stopped.wait(2.0):
            n += 1
            user = 10_000_000 + n
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            try:
                conn.request("GET", f"/latest_news/u{user}?v=1&n={ARTICLES}",
                             headers={"Authorization": f"Bearer u{user}", "Accept-Encoding": "identity"})
                r = conn.getresponse()
                r.read()
                answered = time.monotonic()
                sha = r.getheader("Body-Sha256")
                if r.status != 200 or r.getheader("Use-As-Dictionary") is None:
                    continue
            finally:
                conn.close()
            secret = open(self.secret_path, "rb").read().strip()
            partition = partition_of(secret, user)
            while not stored(self.db, partition, sha):
                if time.monotonic() - answered > 60:
                    self.delays.append(float("inf"))
                    break
                time.sleep(0.005)
            else:
                self.delays.append(time.monotonic() - answered)

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()


def main() -> int:
    work = tempfile.mkdtemp(prefix="bench-scale-", dir=os.environ.get("WORK_DIR"))
    binary = build_upstream(work)
    up_port, admin_port = free_port(), free_port()
    config = dcserve_config(work, up_port, admin_port, STORE_BYTES, str(MEMORY_BYTES))
    store = os.path.join(work, "store")
    db = os.path.join(store, "dcserve.sqlite")
    print(f"bench/scale  {USERS} users x {VERSIONS} versions of a per-user document of {ARTICLES} articles through one "
          f"instance, {CONNECTIONS} connections; rule upstreamVersions 2 + partition; server.memoryBytes {MEMORY_BYTES // MIB} MiB, "
          f"store.maxBytes {STORE_BYTES // MIB} MiB (SQLite); every {VERIFY_EVERY}th user verified; {os.cpu_count()} cores")
    failures: list[str] = []
    verify = lambda i: i % VERIFY_EVERY == 0  # noqa: E731
    with Process([binary, str(up_port)], up_port) as _upstream:
        dc = benchlib.dcserve(["--config", config])
        try:
            pid = dc.proc.pid
            written_before = write_bytes(pid)
            sampler = Sampler(dc)
            probe = CommitProbe(dc.port, db, os.path.join(store, "partition-secret"))

            def on_round(v: int, seconds: float) -> None:
                print(f"  round {v}: {USERS} requests in {seconds:.1f} s ({USERS / seconds:.0f} req/s), "
                      f"RSS {dc.rss_kib() / 1024:.0f} MiB", flush=True)

            t0 = time.monotonic()
            tally = asyncio.run(userload.run(dc.port, USERS, VERSIONS, ARTICLES, CONNECTIONS, verify=verify, on_round=on_round))
            seconds = time.monotonic() - t0
            probe.stop()
            # Every version handed out so far is acknowledged once its batch committed: wait for the
            # writer to be idle (the last commit), then kill -9.
            settle = time.monotonic()
            last = None
            while time.monotonic() - settle < 60:
                m = metrics(admin_port)
                now = sum(v for k, v in m.items() if k.startswith("dcserve_live_store_writes_total"))
                if now == last:
                    break
                last = now
                time.sleep(1.0)
            acknowledged = [i for i in range(0, USERS, VERIFY_EVERY) if i in tally.held_hash]
            secret = open(os.path.join(store, "partition-secret"), "rb").read().strip()
            committed = sum(stored(db, partition_of(secret, i), tally.held_hash[i]) for i in acknowledged)
            written = write_bytes(pid) - written_before
            sampler.stop()
            peak = max(m for _, m in sampler.samples)
            final = metrics(admin_port)
            dc.proc.send_signal(signal.SIGKILL)
            dc.proc.wait()
        finally:
            dc.stop()
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
            blob_bytes = c.execute("SELECT coalesce(sum(size), 0) FROM blobs").fetchone()[0]
            records = c.execute("SELECT count(*) FROM records WHERE rule = 'calendar'").fetchone()[0]
        on_disk = sum(os.path.getsize(os.path.join(store, f)) for f in os.listdir(store) if f.startswith("dcserve.sqlite"))

    requests = tally.requests
    share = tally.deltas / max(tally.returning, 1)
    new_bytes = tally.new_version_bytes
    delays = sorted(probe.delays)
    print(f"traffic: {requests} requests in {seconds:.0f} s ({requests / seconds:.0f} req/s, client: Python asyncio, "
          f"{CONNECTIONS} connections), {tally.verified} bodies verified, {len(tally.errors)} errors")
    for e in tally.errors[:10]:
        print("  error:", e)
    print(f"returning users given a delta: {tally.deltas}/{tally.returning} = {share * 100:.1f}% (target >= 95%); "
          f"no delta because: {tally.misses or '-'}; versions advertised {tally.advertised}; refused over budget "
          f"{final.get(next((k for k in final if 'overBudget' in k), ''), 0):.0f}")
    print("live store writes: " + ", ".join(f"{k.split('outcome=')[-1].strip(chr(34) + '}')} {v:.0f}" for k, v in sorted(final.items())
                                            if k.startswith("dcserve_live_store_writes_total")))
    print(f"store writes: {written / MIB:.0f} MiB written to disk (/proc/PID/io write_bytes) for {new_bytes / MIB:.0f} MiB of new "
          f"versions: write amplification {written / max(new_bytes, 1):.2f}x")
    print(f"store: {blob_bytes / MIB:.0f} MiB of dictionaries in {records} records (budget {STORE_BYTES // MIB} MiB), "
          f"{on_disk / MIB:.0f} MiB on disk (database + WAL)")
    print(f"RSS: peak {peak:.0f} MiB (server.memoryBytes {MEMORY_BYTES // MIB} MiB)")
    print("memory by consumer at the end (budget / used), MiB:")
    for consumer in ("dictionaries", "variants", "responseMemo", "staticBodies", "storeCache", "liveIndex", "unmanaged", "total"):
        b = final.get(f'dcserve_memory_budget_bytes{{consumer="{consumer}"}}', 0) / MIB
        u = final.get(f'dcserve_memory_used_bytes{{consumer="{consumer}"}}', 0) / MIB
        print(f"  {consumer:14} {b:8.1f} {u:8.1f}")
    if delays:
        print(f"commit delay (a probe user's new version until its record is in the database, every 2 s under load): "
              f"{len(delays)} probes, median {delays[len(delays) // 2] * 1000:.0f} ms, max {delays[-1] * 1000:.0f} ms")
    print(f"acknowledged versions of the sampled users in the database before kill -9: {committed}/{len(acknowledged)}",
          flush=True)
    with Process([binary, str(up_port)], up_port) as _upstream:
            # The same store after kill -9: the sampled users name the version they hold (acknowledged
            # above) and must get a delta that decodes to the upstream's next version.
            t0 = time.monotonic()
            with benchlib.dcserve(["--config", config], start_timeout=600) as again:
                opened = time.monotonic() - t0
                t1 = time.monotonic()
                after = asyncio.run(userload.run(again.port, acknowledged, VERSIONS + 1, ARTICLES, CONNECTIONS,
                                                 verify=lambda i: True, first_version=VERSIONS + 1,
                                                 tally=userload.Tally(held_hash=dict(tally.held_hash),
                                                                      held_body=dict(tally.held_body))))
                reopen_seconds = time.monotonic() - t1
    print(f"reopening the store after kill -9: listening after {opened:.1f} s")
    print(f"after kill -9 and reopening: {after.deltas}/{after.returning} sampled users got a delta against the version "
          f"they hold, {after.verified} verified, {len(after.errors)} errors, in {reopen_seconds:.1f} s")
    for e in after.errors[:5]:
        print("  error:", e)
    if tally.errors or after.errors:
        failures.append("bodies failed verification or status")
    if share < 0.95:
        failures.append(f"deltas for {share * 100:.1f}% of returning users (< 95%)")
    if blob_bytes > STORE_BYTES:
        failures.append("store above its budget")
    if not SMOKE and peak * MIB > MEMORY_BYTES:
        failures.append("RSS above the memory budget")
    if committed != len(acknowledged) or after.deltas != len(acknowledged):
        failures.append("acknowledged versions lost or unusable after kill -9")
    subprocess.run(["rm", "-rf", work])
    for f in failures:
        print("MISSED:", f)
    print("ALL TARGETS MET" if not failures else f"{len(failures)} target(s) missed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
