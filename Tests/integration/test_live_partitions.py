"""Per-user partitions of live dictionaries, end to end through the proxy against the
example API: partitions named by the upstream (`upstreamHeader`), the global byte budget across 10,000
partitions (over it, new versions are not advertised), and calendar deltas through three instances on
one PostgreSQL that keep partitions apart. Deltas are decoded with the zstd CLI and the brotli CLI.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import http.client
import json
import os
import pathlib
import shutil
import tempfile
import threading
import time
import urllib.request
import uuid
from contextlib import ExitStack

import pytest

import store_records
from dcserve_server import DCServe
from decoders import dcb_with_brotli_cli, dcz_with_zstd_cli, decode_plain
from pg_support import postgres_server  # noqa: F401  (fixture)
from upstream_support import ExampleAPI

LIFETIME = "max-age=0, stale-while-revalidate=86400"
SECRET = "shared-partition-secret-for-the-three-instances"


def available(body: bytes) -> str:
    return ":" + base64.b64encode(hashlib.sha256(body).digest()).decode() + ":"


def bearer(user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {user}"}


def direct(api: ExampleAPI, path: str, headers: dict[str, str] | None = None, method: str = "GET") -> bytes:
    req = urllib.request.Request(api.base + path, headers=headers or {}, method=method,
                                 data=b"" if method == "POST" else None)
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read()


def write_config(tmp: pathlib.Path, name: str, config: dict) -> str:
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(config))
    return str(path)


def proxy_config(upstream: str, store: dict, rules: dict, **extra) -> dict:
    return {
        "server": {"host": "127.0.0.1", "port": 0},
        "store": store,
        "compression": {"precompress": False},
        "admin": {"enabled": True},
        "upstreams": {"names": ["api"], "api": {"servers": [upstream], "readTimeoutSeconds": 5}},
        "routes": {"names": ["api"], "api": {"prefix": "/", "upstream": "api"}},
        "dictionaries": {"rules": list(rules), **rules, **extra},
    }


@pytest.fixture(scope="module")
def api():
    with ExampleAPI() as a:
        yield a


def test_upstream_named_partition_gets_its_own_deltas(dcserve_bin, api, tmp_path, brotli_cli):
    """The upstream names the partition (`Dictionary-Partition: user-…`, removed before the client sees
    it) and states a lifetime that allows use as a dictionary: each user gets deltas against their own
    previous response; another user naming that hash gets a plain coding."""
    rules = {"owned": {"match": "/api/calendar-owned", "upstreamVersions": 3, "lifetime": "upstream",
                       "partition": {"upstreamHeader": "Dictionary-Partition"}}}
    config = write_config(tmp_path, "owned", proxy_config(api.base, {"path": str(tmp_path / "store")}, rules))
    with DCServe(dcserve_bin, ["--config", config, "--event-loops", "2"]) as server:
        previous = {}
        for user in ["erin", "frank"]:
            status, headers, body = server.get("/api/calendar-owned", {"Accept-Encoding": "identity", **bearer(user)})
            assert status == 200 and headers.get("Content-Encoding") is None
            assert "Dictionary-Partition" not in headers, dict(headers)
            assert headers["Use-As-Dictionary"] == 'match="/api/calendar-owned"', dict(headers)
            assert headers["Cache-Control"] == "private, max-age=0, stale-while-revalidate=86400"
            assert body == direct(api, "/api/calendar-owned", bearer(user))
            previous[user] = body
            direct(api, "/api/calendar/update", bearer(user), method="POST")
        for user in ["erin", "frank"]:
            today = direct(api, "/api/calendar-owned", bearer(user))
            assert today != previous[user]
            for coding, decode in [("dcz", lambda b, d: dcz_with_zstd_cli(b, d)),
                                   ("dcb", lambda b, d: dcb_with_brotli_cli(b, d, brotli_cli))]:
                status, headers, body = server.get("/api/calendar-owned", {
                    "Accept-Encoding": f"{coding}, gzip", "Available-Dictionary": available(previous[user]), **bearer(user)})
                assert status == 200 and headers["Content-Encoding"] == coding, dict(headers)
                assert "Dictionary-Partition" not in headers and "private" in headers["Cache-Control"]
                assert decode(body, previous[user]) == today
                assert len(body) < len(today) // 4, f"{coding}: {len(body)} of {len(today)} bytes"
        # frank naming erin's version: an ordinary coding, as for an unknown hash.
        frank_today = direct(api, "/api/calendar-owned", bearer("frank"))
        status, headers, body = server.get("/api/calendar-owned", {
            "Accept-Encoding": "dcz, gzip", "Available-Dictionary": available(previous["erin"]), **bearer("frank")})
        assert status == 200 and headers["Content-Encoding"] == "gzip", dict(headers)
        assert "Dictionary-Partition" not in headers
        assert decode_plain(body, "gzip", brotli_cli) == frank_today
        _, _, metrics = server.get("/metrics", admin=True)
        mismatches = [l for l in metrics.decode().splitlines()
                      if l.startswith("dcserve_live_events_total") and 'rule="owned"' in l and "partitionMismatch" in l]
        assert mismatches and float(mismatches[0].rsplit(" ", 1)[1]) == 1, mismatches


def test_identical_responses_are_each_partitions_own_dictionary(dcserve_bin, api, tmp_path, brotli_cli):
    """/latest_news partitioned by Authorization (quick mode): every user gets the same bytes, so one
    dictionary hash belongs to several partitions. Each user who was handed it gets deltas against it,
    before and after a restart (the store keeps one record per partition and the bytes once); a user who
    was never handed it gets a plain coding for that hash."""
    store = tmp_path / "store"
    args = ["--upstream", api.base, "--dictionaries", "/latest_news", "--partition-header", "Authorization",
            "--dictionary-lifetime", "max-age=0, stale-while-revalidate=86400", "--store", str(store)]
    users = ["alice", "bob", "carol"]
    with DCServe(dcserve_bin, args) as server:
        for user in users:
            status, headers, yesterday = server.get("/latest_news", {"Accept-Encoding": "identity", **bearer(user)})
            assert status == 200 and headers["Use-As-Dictionary"] == 'match="/latest_news"', dict(headers)
        assert yesterday == direct(api, "/latest_news")
        direct(api, "/latest_news/update", method="POST")
        today = direct(api, "/latest_news")
        assert today != yesterday
    # The bytes once, a record per partition.
    yesterday_hex = hashlib.sha256(yesterday).hexdigest()
    records = [r for r in store_records.records(store) if r["hash"] == yesterday_hex]
    assert store_records.blob(store, yesterday_hex) == yesterday and len(records) == 3, records
    with DCServe(dcserve_bin, args) as server:  # after a restart: the records come back from disk
        for user in users:
            for coding, decode in [("dcz", lambda b, d: dcz_with_zstd_cli(b, d)),
                                   ("dcb", lambda b, d: dcb_with_brotli_cli(b, d, brotli_cli))]:
                status, headers, body = server.get("/latest_news", {
                    "Accept-Encoding": f"{coding}, gzip", "Available-Dictionary": available(yesterday), **bearer(user)})
                assert status == 200 and headers["Content-Encoding"] == coding, (user, dict(headers))
                assert decode(body, yesterday) == today
                assert len(body) < len(today) // 4, f"{user} {coding}: {len(body)} of {len(today)} bytes"
        # dave was never handed yesterday's response: that hash is not his dictionary.
        status, headers, body = server.get("/latest_news", {
            "Accept-Encoding": "dcb, gzip", "Available-Dictionary": available(yesterday), **bearer("dave")})
        assert status == 200 and headers["Content-Encoding"] == "gzip", dict(headers)
        assert decode_plain(body, "gzip", brotli_cli) == today


def test_a_client_cannot_claim_the_upstreams_partition_with_a_header(dcserve_bin, api, tmp_path):
    """One rule's partition comes from the upstream (`Dictionary-Partition`, a user id that is no secret),
    another's from a request header. A client with no credentials sending alice's upstream id in that
    header is another partition: naming alice's dictionary gets it a plain coding, never a delta
    against her calendar."""
    rules = {"owned": {"match": "/api/*", "resources": "/api/calendar-tagged", "upstreamVersions": 3, "lifetime": LIFETIME,
                       "partition": {"upstreamHeader": "Dictionary-Partition"}},
             "items": {"match": "/api/items", "upstreamVersions": 3, "lifetime": LIFETIME,
                       "partition": {"header": "X-Client"}}}
    config = write_config(tmp_path, "mixed", proxy_config(api.base, {"path": str(tmp_path / "store")}, rules))
    req = urllib.request.Request(api.base + "/api/calendar-tagged", headers=bearer("alice"))
    with urllib.request.urlopen(req, timeout=10) as r:
        alice_id = r.headers["Dictionary-Partition"]
    assert alice_id
    with DCServe(dcserve_bin, ["--config", config]) as server:
        status, headers, calendar = server.get("/api/calendar-tagged", {"Accept-Encoding": "identity", **bearer("alice")})
        assert status == 200 and headers.get("Use-As-Dictionary") and "Dictionary-Partition" not in headers, dict(headers)
        for claimed in [alice_id, "someone-else"]:
            status, headers, body = server.get("/api/items", {
                "Accept-Encoding": "dcb, dcz, gzip", "Available-Dictionary": available(calendar), "X-Client": claimed})
            assert status == 200 and headers["Content-Encoding"] == "gzip", (claimed, dict(headers))


def test_a_partitioned_rule_serves_its_owner_on_paths_it_only_compresses(dcserve_bin, api, tmp_path, brotli_cli):
    """The rule advertises /api/calendar and compresses everything its match covers (/api/calendar*):
    alice's calendar is her dictionary on /api/calendar-owned too, and bob naming it there gets a plain
    coding. With a partition named by the upstream, its field never reaches the client on such a path."""
    rules = {"cal": {"match": "/api/calendar*", "resources": "/api/calendar", "upstreamVersions": 3, "lifetime": LIFETIME,
                     "partition": {"header": "Authorization"}}}
    config = write_config(tmp_path, "cal", proxy_config(api.base, {"path": str(tmp_path / "store")}, rules))
    with DCServe(dcserve_bin, ["--config", config]) as server:
        _, headers, calendar = server.get("/api/calendar", {"Accept-Encoding": "identity", **bearer("alice")})
        assert headers["Use-As-Dictionary"] == 'match="/api/calendar*"'
        owned = direct(api, "/api/calendar-owned", bearer("alice"))
        status, headers, body = server.get("/api/calendar-owned", {
            "Accept-Encoding": "dcb", "Available-Dictionary": available(calendar), **bearer("alice")})
        assert status == 200 and headers["Content-Encoding"] == "dcb", dict(headers)
        assert dcb_with_brotli_cli(body, calendar, brotli_cli) == owned and "private" in headers["Cache-Control"]
        # Per user: a browser cache shared by two accounts keys it by the partition's header.
        assert "authorization" in [v.strip().lower() for v in headers["Vary"].split(",")], headers["Vary"]
        status, headers, body = server.get("/api/calendar-owned", {
            "Accept-Encoding": "dcb, gzip", "Available-Dictionary": available(calendar), **bearer("bob")})
        assert status == 200 and headers["Content-Encoding"] == "gzip", dict(headers)
    rules = {"owned": {"match": "/api/calendar-*", "resources": "/api/calendar-tagged", "upstreamVersions": 3,
                       "lifetime": LIFETIME, "partition": {"upstreamHeader": "Dictionary-Partition"}}}
    config = write_config(tmp_path, "owned", proxy_config(api.base, {"path": str(tmp_path / "store2")}, rules))
    with DCServe(dcserve_bin, ["--config", config]) as server:
        status, headers, _ = server.get("/api/calendar-owned", {"Accept-Encoding": "identity", **bearer("alice")})
        assert status == 200 and "Dictionary-Partition" not in headers, dict(headers)


def partition_of(secret_key: bytes, user: str) -> str:
    """The partition of `Authorization: Bearer <user>`: HMAC-SHA256(secret, "header:authorization\\n" + value)."""
    return hmac.new(secret_key, b"header:authorization\n" + f"Bearer {user}".encode(), hashlib.sha256).hexdigest()


def test_ten_thousand_partitions_over_the_budget_advertise_only_what_can_be_kept(dcserve_bin, api, brotli_cli):
    """10,000 users each fetch their ~660-byte profile (a private live dictionary of their own, usable for
    a day). The store and the live index share one byte budget (store.maxBytes, room for ~900): once it
    is full of versions still within their lifetime, a newcomer's version is not advertised (nor stored)
    rather than evict one a client was promised — evicting the least recently used would evict every
    version before its user returns. The refusals are counted (dcserve_live_events_total{event=
    "overBudget"}) and logged once (at most one line a minute); the users kept get deltas; the store
    stays within its budget."""
    users, budget = 10_000, 600_000
    # tmpfs when there is one: the store syncs every write, which this test is not about.
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="dcserve-partitions-", dir=base))
    try:
        store = tmp / "store"
        rules = {"profile": {"match": "/api/profile", "upstreamVersions": 2, "lifetime": LIFETIME,
                             "partition": {"header": "Authorization"}}}
        config = write_config(tmp, "budget", proxy_config(api.base, {"path": str(store), "maxBytes": budget,
                                                                     "housekeepingSeconds": 1}, rules))
        size = len(direct(api, "/api/profile", bearer("u0")))
        capacity = budget // size
        with DCServe(dcserve_bin, ["--config", config, "--event-loops", "2"]) as server:
            u0 = direct(api, "/api/profile", bearer("u0"))
            advertised: list[int] = []
            errors: list[str] = []
            lock = threading.Lock()

            def client(first: int, step: int) -> None:
                conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
                try:
                    for n in range(first, users, step):
                        conn.request("GET", "/api/profile", headers={"Accept-Encoding": "identity", **bearer(f"u{n}")})
                        r = conn.getresponse()
                        body = r.read()
                        if r.status != 200 or len(body) != size:
                            errors.append(f"u{n}: {r.status} {dict(r.headers)}")
                            return
                        if "Use-As-Dictionary" in r.headers:
                            with lock:
                                advertised.append(n)
                finally:
                    conn.close()

            threads = [threading.Thread(target=client, args=(i, 2)) for i in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=240)
            assert not any(t.is_alive() for t in threads), "clients did not finish in 240 s"
            assert not errors, errors[:3]
            # What fits is advertised (the first users), nothing beyond it.
            assert capacity * 0.98 <= len(advertised) <= capacity, (len(advertised), capacity)
            assert 0 in advertised and max(advertised) < 2 * capacity, sorted(advertised)[-5:]

            _, _, text = server.get("/metrics", admin=True)
            refused = [line for line in text.decode().splitlines()
                       if line.startswith("dcserve_live_events_total") and 'event="overBudget"' in line]
            assert refused and float(refused[0].split()[-1]) == users - len(advertised), refused
            warnings = [line for line in server.log().splitlines() if "the working set exceeds what can be kept" in line]
            assert len(warnings) == 1, warnings  # at most one line a minute

            # Every advertised version is kept: in the store (within its budget) and usable for a delta.
            def records():
                return [r for r in store_records.records(store) if r.get("rule") == "profile"]

            deadline = time.monotonic() + 30
            kept = records()
            while time.monotonic() < deadline and len(kept) < len(advertised):
                time.sleep(0.2)
                kept = records()
            assert len(kept) == len(advertised) and sum(r["byte_size"] for r in kept) <= budget
            key = (store / "partition-secret").read_text().strip().encode()
            index = {partition_of(key, f"u{n}"): n for n in range(users)}
            assert sorted(index[r["partition"]] for r in kept) == sorted(advertised)
            assert not [p for p in store.iterdir() if len(p.name) == 64]

            # Through HTTP, with the next revision of the profile (same URL path, so the same slot): a kept
            # user gets a delta (and its new version is advertised: its previous one makes room); a
            # refused user, naming the version it was never told to keep, a plain coding.
            last_kept, refused_user = f"u{max(advertised)}", f"u{users - 1}"
            for user, expected in [("u0", "dcz"), (last_kept, "dcz"), (refused_user, "gzip")]:
                held = direct(api, "/api/profile", bearer(user))
                today = direct(api, "/api/profile?rev=2", bearer(user))
                status, headers, body = server.get("/api/profile?rev=2", {
                    "Accept-Encoding": "dcz, gzip", "Available-Dictionary": available(held), **bearer(user)})
                assert status == 200 and headers["Content-Encoding"] == expected, (user, dict(headers))
                assert ("Use-As-Dictionary" in headers) == (expected == "dcz"), (user, dict(headers))
                decoded = dcz_with_zstd_cli(body, held) if expected == "dcz" else decode_plain(body, "gzip", brotli_cli)
                assert decoded == today
            # Another user naming a kept user's hash: plain.
            status, headers, _ = server.get("/api/profile?rev=2", {
                "Accept-Encoding": "dcz, gzip", "Available-Dictionary": available(u0), **bearer(f"u{users - 2}")})
            assert headers["Content-Encoding"] == "gzip", dict(headers)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_calendar_partitions_through_three_instances_on_postgres(dcserve_bin, api, tmp_path, postgres_server, brotli_cli):
    """Three dcserve instances on one PostgreSQL: a user's calendar stored by one instance gives that
    user deltas on the others; another user naming it gets a plain coding on every instance; the rows
    hold HMAC partition ids, never a credential."""
    name, url = postgres_server.new_database()
    rules = {"calendar": {"match": "/api/calendar", "upstreamVersions": 3, "lifetime": LIFETIME,
                          "partition": {"header": "Authorization"}}}
    configs = []
    for n in "abc":
        store = {"kind": "postgres", "path": str(tmp_path / f"cache-{n}"), "housekeepingSeconds": 1,
                 "postgres": {"url": url, "connectTimeoutSeconds": 2}}
        configs.append(write_config(tmp_path, n, proxy_config(api.base, store, rules, partitionSecret=SECRET)))
    users = {"alice": f"alice-{uuid.uuid4().hex[:6]}", "bob": f"bob-{uuid.uuid4().hex[:6]}"}
    with ExitStack() as stack:
        a, b, c = [stack.enter_context(DCServe(dcserve_bin, ["--config", cfg])) for cfg in configs]
        first = {}
        for user, server in [("alice", a), ("bob", b)]:
            status, headers, body = server.get("/api/calendar", {"Accept-Encoding": "identity", **bearer(users[user])})
            assert status == 200 and "Use-As-Dictionary" in headers and "private" in headers["Cache-Control"]
            first[user] = body
            direct(api, "/api/calendar/update", bearer(users[user]), method="POST")
        today = {user: direct(api, "/api/calendar", bearer(users[user])) for user in users}

        def delta(server: DCServe, user: str, dictionary: bytes, coding: str = "dcz"):
            return server.get("/api/calendar", {"Accept-Encoding": f"{coding}, gzip",
                                                "Available-Dictionary": available(dictionary), **bearer(users[user])})

        def eventual_delta(server: DCServe, user: str, dictionary: bytes, coding: str):
            """A version stored by another instance (in the background, batched) reaches `server`
            within a few seconds."""
            deadline = time.monotonic() + 5
            while True:
                status, headers, body = delta(server, user, dictionary, coding)
                if headers.get("Content-Encoding") == coding or time.monotonic() > deadline:
                    return status, headers, body
                time.sleep(0.05)

        # alice's v1 (stored by A) reaches C, bob's (stored by B) reaches A.
        status, headers, body = eventual_delta(c, "alice", first["alice"], "dcz")
        assert status == 200 and headers["Content-Encoding"] == "dcz", dict(headers) | {"log": c.logs()[-1500:]}
        assert dcz_with_zstd_cli(body, first["alice"]) == today["alice"]
        status, headers, body = eventual_delta(a, "bob", first["bob"], "dcb")
        assert headers["Content-Encoding"] == "dcb", dict(headers) | {"log": a.logs()[-1500:]}
        assert dcb_with_brotli_cli(body, first["bob"], brotli_cli) == today["bob"]
        # bob naming alice's hash, and alice naming bob's, on every instance: plain, never coded against
        # the other's bytes.
        for server in (a, b, c):
            for user, other in [("bob", "alice"), ("alice", "bob")]:
                status, headers, body = delta(server, user, first[other])
                assert status == 200 and headers["Content-Encoding"] == "gzip", dict(headers)
                assert "private" in headers["Cache-Control"]
                assert decode_plain(body, "gzip", brotli_cli) == direct(api, "/api/calendar", bearer(users[user]))
        # The rows: one partition per user, 64-hex HMAC ids; no credential anywhere in the table.
        rows = postgres_server.psql("SELECT DISTINCT partition FROM dcserve_dictionaries WHERE rule = 'calendar'", name)
        partitions = set(rows.split())
        expected = {partition_of(SECRET.encode(), users[u]) for u in users}
        assert expected <= partitions and all(len(p) == 64 for p in partitions), partitions
        dump = postgres_server.psql("SELECT string_agg(t::text, ' ') FROM dcserve_dictionaries t", name)
        assert "Bearer" not in dump and users["alice"] not in dump


def test_partitioned_rule_on_postgres_requires_a_shared_secret(dcserve_bin, tmp_path):
    """Each instance would otherwise generate its own secret in its local cache, so partition ids (and
    per-user deltas) would differ from instance to instance: refused at start, naming the key."""
    import subprocess
    config = {"site": {"root": str(tmp_path)},
              "store": {"kind": "postgres", "path": str(tmp_path / "cache"),
                        "postgres": {"url": "postgres://dcserve:pw@127.0.0.1:1/none?sslmode=disable", "connectTimeoutSeconds": 1}},
              "dictionaries": {"rules": ["r"], "r": {"match": "/api/calendar", "upstreamVersions": 2,
                                                     "partition": {"header": "Authorization"}}}}
    path = tmp_path / "pg-partition.json"
    path.write_text(json.dumps(config))
    r = subprocess.run([dcserve_bin, "serve", "--config", str(path), "--port", "0"], capture_output=True, timeout=30)
    out = (r.stdout + r.stderr).decode()
    assert r.returncode != 0 and "dictionaries.partitionSecret" in out and "postgres" in out, out
    assert "pw@" not in out
