"""A chat's history dictionaries are shared by every instance on one PostgreSQL store: two instances
(same partition secret) serve one conversation in turns; its window holds the bodies both served, the
dictionary one instance builds is offered (`Link`), served at its URL and used for dcz/dcb deltas by
the other — and the other way round — while another user still cannot fetch it on either instance.
Through the release binary, a throwaway PostgreSQL and the example API; deltas are decoded with the
zstd CLI, python zstandard and the brotli CLI.
"""
from __future__ import annotations

import hashlib
import json
import pathlib
import secrets
import time

import pytest

from dcserve_server import DCServe
from decoders import dcb_with_brotli_cli, dcz_with_python_zstandard, dcz_with_zstd_cli
from pg_support import postgres_server  # noqa: F401  (fixture)
from test_history_dictionaries import auth, available, direct, link_of, request
from test_shared_store_instances import metric
from upstream_support import ExampleAPI

HISTORY = {"firstBuildBytes": 2500, "rebuildBytes": 2500, "maxBytes": 16384, "windowBytes": 16384,
           "lifetimeSeconds": 3600, "keep": 4}


def config(tmp: pathlib.Path, name: str, url: str, upstream: str, secret: str) -> str:
    document = {
        "server": {"host": "127.0.0.1", "port": 0},
        "store": {"kind": "postgres", "path": str(tmp / f"cache-{name}"),
                  "postgres": {"url": url, "connectTimeoutSeconds": 5}},
        "compression": {"precompress": False},
        "upstreams": {"names": ["api"], "api": {"servers": [upstream], "readTimeoutSeconds": 5}},
        "routes": {"names": ["api"], "api": {"prefix": "/", "upstream": "api"}},
        "dictionaries": {
            "rules": ["chats"], "partitionSecret": secret,
            "chats": {"match": "/api/chats/:chat/*", "partition": {"header": "Authorization"}, "history": HISTORY},
        },
    }
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(document))
    return str(path)


@pytest.fixture(scope="module")
def api():
    with ExampleAPI() as a:
        yield a


def new_chat(api: ExampleAPI) -> str:
    status, _, body = request(api.port, "/api/chats", {**auth("alice"), "Content-Type": "application/json"}, "POST",
                              json.dumps({"with": "bob"}).encode())
    assert status == 201, body
    return json.loads(body)["chat"]


def say(server: DCServe, chat: str, n: int, marker: str) -> bytes:
    """Posts message n of the chat (by alice or bob) through `server`, then fetches, as alice through
    `server`, the messages from n on: a body only `server` ever served. Returns it."""
    text = f"{marker} message {n} about the tram line budget, the council vote on {n % 7 + 1} December."
    author = "alice" if n % 2 == 0 else "bob"
    status, _, body = request(server.port, f"/api/chats/{chat}/messages", {**auth(author), "Content-Type": "application/json"},
                              "POST", json.dumps({"text": text}).encode())
    assert status == 201, body
    status, headers, body = request(server.port, f"/api/chats/{chat}/messages?since={n}",
                                    {**auth("alice"), "Accept-Encoding": "identity"})
    assert status == 200 and marker.encode() in body
    return body


def offered(server: DCServe, chat: str, want: str | None = None) -> str | None:
    """The hash the chat's Link names on `server` for alice (waiting, bounded, for `want`). Asked
    with HEAD: it adds nothing to the window."""
    deadline = time.monotonic() + 10
    while True:
        status, headers, _ = request(server.port, f"/api/chats/{chat}/messages?since=0",
                                     {**auth("alice"), "Accept-Encoding": "identity"}, "HEAD")
        assert status == 200
        found = link_of(headers)
        hex_hash = found[1] if found else None
        if want is None or hex_hash == want or time.monotonic() > deadline:
            return hex_hash
        time.sleep(0.05)


def in_window(postgres, database: str, marker: str) -> None:
    """Waits (bounded: 10 s) until a body containing `marker` is in a window in PostgreSQL: instances
    append in the background, and each message should be there before the next is said."""
    deadline = time.monotonic() + 10
    query = f"SELECT count(*) FROM dcserve_history_entries WHERE position('{marker}'::bytea in body) > 0"
    while postgres.psql(query, database=database) == "0":
        assert time.monotonic() < deadline, f"{marker} never reached the shared window"
        time.sleep(0.02)


def converse_until_built(postgres, database: str, servers: list[DCServe], chat: str, start: int,
                         previous: str | None) -> tuple[str, int]:
    """Says messages through `servers` in turn until one of them offers a dictionary other than
    `previous` (bounded: 40 messages, 30 s). Returns (hash, next message number)."""
    deadline = time.monotonic() + 30
    n = start
    while n < start + 40 and time.monotonic() < deadline:
        server = servers[n % len(servers)]
        marker = f"via-{server.port}-{n}:"
        say(server, chat, n, marker)
        in_window(postgres, database, marker)
        n += 1
        for s in servers:
            found = offered(s, chat)
            if found and found != previous:
                return found, n
    raise AssertionError(f"no dictionary built after {n - start} messages")


def dictionary_from(server: DCServe, chat: str, hex_hash: str, user: str = "alice") -> tuple[int, bytes]:
    status, _, body = request(server.port, f"/api/chats/{chat}/.dcserve-dictionary/{hex_hash}",
                              {**auth(user), "Accept-Encoding": "identity"})
    return status, body


def assert_deltas(server: DCServe, api: ExampleAPI, chat: str, dictionary: bytes, brotli_cli: str) -> None:
    """alice naming `dictionary` on `server` gets dcz and dcb bodies that independent decoders turn
    into exactly what the API answers."""
    path = f"/api/chats/{chat}/messages?since=1"
    expected = direct(api, path, "alice")
    status, headers, body = request(server.port, path, {**auth("alice"), "Accept-Encoding": "dcz, gzip",
                                                        "Available-Dictionary": available(dictionary)})
    assert status == 200 and headers["Content-Encoding"] == "dcz", (dict(headers), server.logs()[-3000:])
    assert dcz_with_zstd_cli(body, dictionary) == expected
    assert dcz_with_python_zstandard(body, dictionary) == expected
    assert len(body) < len(expected) // 3, f"dcz {len(body)} of {len(expected)} bytes"
    status, headers, body = request(server.port, path, {**auth("alice"), "Accept-Encoding": "dcb, gzip",
                                                        "Available-Dictionary": available(dictionary)})
    assert status == 200 and headers["Content-Encoding"] == "dcb", dict(headers)
    assert dcb_with_brotli_cli(body, dictionary, brotli_cli) == expected
    # bob naming alice's dictionary: a plain coding, as for an unknown hash.
    status, headers, _ = request(server.port, path, {**auth("bob"), "Accept-Encoding": "dcz, dcb, gzip",
                                                     "Available-Dictionary": available(dictionary)})
    assert status == 200 and headers["Content-Encoding"] == "gzip", dict(headers)


def test_a_chat_served_by_two_instances_shares_its_history_dictionaries(dcserve_bin, tmp_path, postgres_server, api,
                                                                        brotli_cli):
    database, url = postgres_server.new_database()
    secret = secrets.token_hex(32)
    chat = new_chat(api)
    with DCServe(dcserve_bin, ["--config", config(tmp_path, "a", url, api.base, secret)]) as a, \
            DCServe(dcserve_bin, ["--config", config(tmp_path, "b", url, api.base, secret)]) as b:
        # The conversation alternates between the instances: one window gets both halves.
        first, n = converse_until_built(postgres_server, database, [a, b], chat, 0, None)
        built = {s.port: metric(s, "dcserve_history_dictionaries_built_total") for s in (a, b)}
        assert sorted(built.values()) == [0, 1], f"one instance built it: {built}"
        builder, other = (a, b) if built[a.port] else (b, a)
        for server in (a, b):
            assert offered(server, chat, want=first) == first, f"instance {server.port} does not offer {first}"
            status, dictionary = dictionary_from(server, chat, first)
            assert status == 200 and hashlib.sha256(dictionary).hexdigest() == first
            assert f"via-{a.port}-".encode() in dictionary and f"via-{b.port}-".encode() in dictionary, \
                "built from the bodies both instances served"
            # Partitions hold across instances: bob (also in this chat) and carol get the 404.
            for user in ("bob", "carol"):
                assert dictionary_from(server, chat, first, user)[0] == 404
            assert_deltas(server, api, chat, dictionary, brotli_cli)

        # The other way round: only the other instance serves the chat now, so it builds the next
        # dictionary, and the first builder offers and uses it.
        second, n = converse_until_built(postgres_server, database, [other], chat, n, first)
        assert metric(other, "dcserve_history_dictionaries_built_total") == 1
        assert metric(builder, "dcserve_history_dictionaries_built_total") == 1
        assert offered(builder, chat, want=second) == second, builder.logs()[-3000:]
        status, dictionary = dictionary_from(builder, chat, second)
        assert status == 200 and hashlib.sha256(dictionary).hexdigest() == second
        assert dictionary_from(builder, chat, second, "bob")[0] == 404
        assert_deltas(builder, api, chat, dictionary, brotli_cli)

    # What the store keeps of the windows: one per user who read the chat (alice, and bob's reads in
    # the checks above), keyed by partition ids (HMACs), never the bearer token.
    partitions = postgres_server.psql("SELECT DISTINCT partition FROM dcserve_history_groups", database=database).split()
    assert len(partitions) == 2 and all(len(p) == 64 and "alice" not in p for p in partitions), partitions


def test_more_active_chats_than_max_groups_are_reported_on_the_shared_store(dcserve_bin, tmp_path, postgres_server, api):
    database, url = postgres_server.new_database()
    document = json.loads(pathlib.Path(config(tmp_path, "m", url, api.base, secrets.token_hex(32))).read_text())
    document["store"]["housekeepingSeconds"] = 1
    document["dictionaries"]["chats"]["history"]["maxGroups"] = 1
    path = tmp_path / "max-groups.json"
    path.write_text(json.dumps(document))
    groups = "SELECT count(*) FROM dcserve_history_groups"
    with DCServe(dcserve_bin, ["--config", str(path)]) as server:
        # Alice reads her two chats: two windows in the store, room for one.
        for chat in ("1", "2"):
            status, _, _ = request(server.port, f"/api/chats/{chat}/messages?since=0", {**auth("alice"), "Accept-Encoding": "identity"})
            assert status == 200
        deadline = time.monotonic() + 10
        while metric(server, "dcserve_history_groups_over_capacity_total") < 1:
            assert time.monotonic() < deadline, server.logs()[-3000:]
            time.sleep(0.1)
        assert postgres_server.psql(groups, database=database) == "1"
        warnings = [line for line in server.logs().splitlines() if "more conversations active than history.maxGroups" in line]
        assert len(warnings) == 1 and "dictionaries.chats.history.maxGroups" in warnings[0], server.logs()[-3000:]
