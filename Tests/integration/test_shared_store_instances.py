"""Several instances on one PostgreSQL store must share the partition secret (per-user partitions are
HMACs under it): the first instance leaves a fingerprint of its secret in the store, and an instance
with another secret refuses to start with a message naming `dictionaries.partitionSecret`. Also: history
rules report more active conversations than `maxGroups` (metric and log line) instead of silently
never building. Through the release binary, against a throwaway PostgreSQL and the example API.
"""
from __future__ import annotations

import json
import pathlib
import re
import secrets
import subprocess

import pytest

from dcserve_server import DCServe
from pg_support import postgres_server  # noqa: F401  (fixture)
from upstream_support import ExampleAPI


def config(tmp: pathlib.Path, name: str, url: str, upstream: str, secret: str | None, **history) -> str:
    """An instance proxying the example API with a partitioned history rule on the shared store."""
    dictionaries: dict = {
        "rules": ["chats"],
        "chats": {"match": "/api/chats/:chat/*", "partition": {"header": "Authorization"},
                  "history": {"firstBuildBytes": 100000, **history}},
    }
    if secret is not None:
        dictionaries["partitionSecret"] = secret
    document = {
        "server": {"host": "127.0.0.1", "port": 0},
        "store": {"kind": "postgres", "path": str(tmp / f"cache-{name}"),
                  "postgres": {"url": url, "connectTimeoutSeconds": 5}},
        "compression": {"precompress": False},
        "upstreams": {"names": ["api"], "api": {"servers": [upstream], "readTimeoutSeconds": 5}},
        "routes": {"names": ["api"], "api": {"prefix": "/", "upstream": "api"}},
        "dictionaries": dictionaries,
    }
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(document))
    return str(path)


def refusal(dcserve_bin: str, config_path: str) -> tuple[int, str]:
    out = subprocess.run([dcserve_bin, "serve", "--config", config_path, "--port", "0", "--admin-port", "0"],
                         capture_output=True, text=True, timeout=60)
    return out.returncode, out.stdout + out.stderr


@pytest.fixture(scope="module")
def api():
    with ExampleAPI() as a:
        yield a


def test_instances_with_different_partition_secrets_cannot_share_a_store(dcserve_bin, tmp_path, postgres_server, api):
    _, url = postgres_server.new_database()
    first_secret = secrets.token_hex(32)
    with DCServe(dcserve_bin, ["--config", config(tmp_path, "a", url, api.base, first_secret)]) as a:
        stored = postgres_server.psql("SELECT fingerprint FROM dcserve_partition_secret", database=url.rsplit("/", 1)[1].split("?")[0])
        assert re.fullmatch(r"[0-9a-f]{64}", stored) and first_secret not in stored
        # Same secret: a second instance starts and serves.
        with DCServe(dcserve_bin, ["--config", config(tmp_path, "b", url, api.base, first_secret)]) as b:
            status, _, _ = b.get("/api/chats", {"Authorization": "Bearer alice"})
            assert status == 200
        # Another secret: refused at start, naming the setting, never printing either secret.
        code, output = refusal(dcserve_bin, config(tmp_path, "c", url, api.base, secrets.token_hex(32)))
        assert code != 0
        assert "dictionaries.partitionSecret" in output and "differs" in output, output
        assert first_secret not in output
        # No secret configured: refused as well (a secret generated per instance could never match).
        code, output = refusal(dcserve_bin, config(tmp_path, "d", url, api.base, None))
        assert code != 0 and "dictionaries.partitionSecret" in output, output
        assert a.alive(), a.logs()
    # The store still holds the first fingerprint: the refused instances changed nothing.
    database = url.rsplit("/", 1)[1].split("?")[0]
    assert postgres_server.psql("SELECT fingerprint FROM dcserve_partition_secret", database=database) == stored


def metric(server: DCServe, name: str) -> float:
    status, _, body = server.get("/metrics", admin=True)
    assert status == 200
    return sum(float(line.rsplit(" ", 1)[1]) for line in body.decode().splitlines()
               if line.startswith(name) and line[len(name)] in " {")


def test_more_active_chats_than_max_groups_are_reported(dcserve_bin, tmp_path, api):
    document = json.loads(pathlib.Path(config(tmp_path, "h", "postgres://unused", api.base, secrets.token_hex(32),
                                              maxGroups=1)).read_text())
    document["store"] = {"path": str(tmp_path / "store")}
    path = tmp_path / "capacity.json"
    path.write_text(json.dumps(document))
    with DCServe(dcserve_bin, ["--config", str(path)]) as server:
        # Alice reads her two chats in turn: two active conversations, room for one window.
        for _ in range(5):
            for chat in ("1", "2"):
                status, _, _ = server.get(f"/api/chats/{chat}/messages", {"Authorization": "Bearer alice"})
                assert status == 200
        assert metric(server, "dcserve_history_groups_over_capacity_total") == 9  # every switch drops an active window
        warnings = [line for line in server.logs().splitlines() if "more conversations active than history.maxGroups" in line]
        assert len(warnings) == 1, server.logs()  # at most one line a minute
        assert "dictionaries.chats.history.maxGroups" in warnings[0]
