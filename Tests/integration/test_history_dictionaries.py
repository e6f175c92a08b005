"""History dictionaries through the reverse proxy against the example API's chats:
per (chat, user) a dictionary built from recent message responses, offered with `Link`, served at a
content-addressed URL only to its partition, and used for dcb/dcz of later fetches of that chat.
Deltas are decoded with the zstd CLI and the brotli CLI, never with dcserve's own code.
"""
from __future__ import annotations

import base64
import hashlib
import http.client
import json
import pathlib
import re
import subprocess
import time

import pytest

from dcserve_server import DCServe
from decoders import dcb_with_brotli_cli, dcz_with_zstd_cli
from upstream_support import ExampleAPI

LINK_RE = re.compile(r'^<(/api/chats/(\w+)/\.dcserve-dictionary/([0-9a-f]{64}))>; rel="compression-dictionary"$')


def history_config(tmp: pathlib.Path, upstream: str, **history) -> str:
    settings = {"firstBuildBytes": 1500, "rebuildBytes": 6000, "maxBytes": 8192, "windowBytes": 16384, "lifetimeSeconds": 3600, "keep": 4}
    settings.update(history)
    config = {
        "server": {"host": "127.0.0.1", "port": 0},
        "store": {"path": str(tmp / "store")},
        "compression": {"precompress": False},
        "upstreams": {"names": ["api"], "api": {"servers": [upstream], "readTimeoutSeconds": 5}},
        "routes": {"names": ["api"], "api": {"prefix": "/", "upstream": "api"}},
        "dictionaries": {
            "rules": ["chats"],
            "chats": {"match": "/api/chats/:chat/*", "partition": {"header": "Authorization"}, "history": settings},
        },
    }
    path = tmp / "history.json"
    path.write_text(json.dumps(config))
    return str(path)


def request(port: int, path: str, headers: dict[str, str] | None = None, method: str = "GET", body: bytes | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, r.headers, r.read()
    finally:
        conn.close()


def auth(user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {user}"}


def available(dictionary: bytes) -> str:
    return ":" + base64.b64encode(hashlib.sha256(dictionary).digest()).decode() + ":"


def direct(api: ExampleAPI, path: str, user: str) -> bytes:
    status, _, body = request(api.port, path, auth(user))
    assert status == 200
    return body


def post(port: int, chat: str, user: str, text: str) -> None:
    status, _, body = request(port, f"/api/chats/{chat}/messages", {**auth(user), "Content-Type": "application/json"},
                              "POST", json.dumps({"text": text}).encode())
    assert status == 201, body


def link_of(headers) -> tuple[str, str] | None:
    """(url, hex) of the compression-dictionary Link, or None."""
    for value in headers.get_all("Link") or []:
        m = LINK_RE.match(value)
        if m:
            return m.group(1), m.group(3)
    return None


def converse_until_link(port: int, chat: str, user: str, other: str, previous: str | None = None,
                        rounds: int = 60) -> tuple[str, str]:
    """Posts messages and fetches `messages?since=` until a Link naming a dictionary other than
    `previous` appears (bounded: `rounds` posts, then fetches only — the build runs in the background
    and may finish after the last post on a loaded machine — all within 20 s)."""
    deadline = time.monotonic() + 20
    i = 0
    while time.monotonic() < deadline:
        if i < rounds:
            post(port, chat, user if i % 2 == 0 else other, f"Message {i} about the tram line budget, "
                 f"the council vote on {i % 7 + 1} December and who brings the figures.")
        else:
            time.sleep(0.05)
        status, headers, _ = request(port, f"/api/chats/{chat}/messages?since={max(0, min(i, rounds) - 3)}",
                                     {**auth(user), "Accept-Encoding": "identity"})
        assert status == 200
        found = link_of(headers)
        if found and found[1] != previous:
            return found
        i += 1
    raise AssertionError(f"no new Link within 20 s ({min(i, rounds)} messages posted)")


@pytest.fixture(scope="module")
def api():
    with ExampleAPI() as a:
        yield a


@pytest.fixture(scope="module")
def proxy(dcserve_bin, api, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("history")
    server = DCServe(dcserve_bin, ["--config", history_config(tmp, api.base), "--event-loops", "2"])
    yield server
    server.stop()


@pytest.fixture(scope="module")
def first(proxy):
    """Alice's first dictionary of chat 1: (url, hex, bytes)."""
    status, headers, _ = request(proxy.port, "/api/chats/1/messages?since=0", {**auth("alice"), "Accept-Encoding": "identity"})
    assert status == 200 and link_of(headers) is None, "no dictionary before any history"
    url, hex_hash = converse_until_link(proxy.port, "1", "alice", "bob")
    status, headers, body = request(proxy.port, url, {**auth("alice"), "Accept-Encoding": "identity"})
    assert status == 200, body
    return url, hex_hash, body, headers


def test_link_and_dictionary_scoped_to_the_chat(first):
    url, hex_hash, body, headers = first
    assert hashlib.sha256(body).hexdigest() == hex_hash, "the URL is content-addressed"
    assert headers["Use-As-Dictionary"] == 'match="/api/chats/1/*", id="chat:1"'
    cache = headers["Cache-Control"]
    m = re.fullmatch(r"private, max-age=(\d+)", cache)
    assert m and 3500 <= int(m.group(1)) <= 3600, cache
    assert headers["Access-Control-Allow-Origin"] == "*"
    assert "Authorization" in headers["Vary"]
    assert 0 < len(body) <= 8192
    assert b"tram line budget" in body, "built from the chat's messages"


def test_dictionary_url_refused_to_other_partitions_like_an_unknown_hash(proxy, first):
    url, hex_hash, _, _ = first
    unknown = url.replace(hex_hash, "0" * 64)
    status, _, unknown_body = request(proxy.port, unknown, {**auth("alice"), "Accept-Encoding": "identity"})
    assert status == 404
    for headers in [auth("bob"), auth("carol"), {}, {"Authorization": "Bearer mallory"}]:
        status, _, body = request(proxy.port, url, {**headers, "Accept-Encoding": "identity"})
        assert (status, body) == (404, unknown_body), headers
    # Another chat's path with the same hash: refused too (the URL lives in its own chat's scope).
    status, _, body = request(proxy.port, url.replace("/chats/1/", "/chats/2/"), {**auth("alice"), "Accept-Encoding": "identity"})
    assert (status, body) == (404, unknown_body)
    status, _, body = request(proxy.port, "/.well-known/dcserve-dictionary/" + hex_hash, {**auth("bob"), "Accept-Encoding": "identity"})
    assert (status, body) == (404, unknown_body)


def test_next_fetch_naming_the_hash_is_dcz_and_dcb(proxy, api, first, brotli_cli):
    _, hex_hash, dictionary, _ = first
    post(proxy.port, "1", "bob", "Bob again: the figures are in the shared folder, see you Thursday.")
    path = "/api/chats/1/messages?since=2"
    expected = direct(api, path, "alice")
    status, headers, body = request(proxy.port, path, {**auth("alice"), "Accept-Encoding": "dcz, gzip",
                                                       "Available-Dictionary": available(dictionary)})
    assert status == 200 and headers["Content-Encoding"] == "dcz", dict(headers)
    assert dcz_with_zstd_cli(body, dictionary) == expected
    assert len(body) < len(expected) // 3, f"dcz {len(body)} of {len(expected)} bytes"
    offered = link_of(headers)
    assert offered is None or offered[1] != hex_hash, "no Link to the dictionary the client already names"
    status, headers, body = request(proxy.port, path, {**auth("alice"), "Accept-Encoding": "dcb, gzip",
                                                       "Available-Dictionary": available(dictionary)})
    assert status == 200 and headers["Content-Encoding"] == "dcb", dict(headers)
    assert dcb_with_brotli_cli(body, dictionary, brotli_cli) == expected


def test_other_partition_or_chat_naming_the_hash_gets_a_plain_coding(proxy, first):
    _, _, dictionary, _ = first
    offer = {"Accept-Encoding": "dcz, dcb, gzip", "Available-Dictionary": available(dictionary)}
    status, headers, _ = request(proxy.port, "/api/chats/1/messages?since=0", {**auth("bob"), **offer})
    assert status == 200 and headers["Content-Encoding"] == "gzip", "bob is another partition"
    status, headers, _ = request(proxy.port, "/api/chats/2/messages?since=0", {**auth("alice"), **offer})
    assert status == 200 and headers["Content-Encoding"] == "gzip", "chat 2 is another group"


def test_after_a_rebuild_old_and_new_dictionaries_both_work(proxy, api, first):
    old_url, old_hex, old, _ = first
    new_url, new_hex = converse_until_link(proxy.port, "1", "alice", "bob", previous=old_hex)
    assert new_hex != old_hex
    # The new dictionary's URL is in the chat's scope: fetched naming the old one, it comes delta-coded.
    status, headers, coded = request(proxy.port, new_url, {**auth("alice"), "Accept-Encoding": "dcz",
                                                           "Available-Dictionary": available(old)})
    assert status == 200 and headers["Content-Encoding"] == "dcz", dict(headers)
    new = dcz_with_zstd_cli(coded, old)
    assert hashlib.sha256(new).hexdigest() == new_hex
    assert len(coded) < len(new) // 2
    path = "/api/chats/1/messages?since=4"
    expected = direct(api, path, "alice")
    for dictionary in (old, new):
        status, headers, body = request(proxy.port, path, {**auth("alice"), "Accept-Encoding": "dcz",
                                                           "Available-Dictionary": available(dictionary)})
        assert status == 200 and headers["Content-Encoding"] == "dcz", dict(headers)
        assert dcz_with_zstd_cli(body, dictionary) == expected


def test_early_link_on_the_response_completing_the_first_dictionary(dcserve_bin, api, tmp_path):
    """The response whose body brings a new chat's window to firstBuildBytes already carries the Link
    to the dictionary built from the window (that body included); the URL answers right after, the
    next fetch naming it is delta-coded, and after a graceful restart (pending store writes drained)
    the URL still answers from the store."""
    config = history_config(tmp_path, api.base)  # firstBuildBytes 1500, maxBytes 8192
    server = DCServe(dcserve_bin, ["--config", config])
    try:
        status, _, body = request(server.port, "/api/chats", {**auth("alice"), "Content-Type": "application/json"},
                                  "POST", json.dumps({"with": "bob"}).encode())
        assert status == 201, body
        chat = json.loads(body)["chat"]
        bodies: list[bytes] = []
        for i in range(20):
            post(server.port, chat, "alice" if i % 2 == 0 else "bob", f"Message {i} about the tram line budget.")
            status, headers, body = request(server.port, f"/api/chats/{chat}/messages?since=0",
                                            {**auth("alice"), "Accept-Encoding": "identity"})
            assert status == 200
            bodies.append(body)
            found = link_of(headers)
            if sum(map(len, bodies)) < 1500:
                assert found is None, f"Link before firstBuildBytes (fetch {i + 1})"
                continue
            assert found, f"fetch {i + 1} completed the first dictionary ({sum(map(len, bodies))} bytes) but carries no Link"
            break
        else:
            raise AssertionError("firstBuildBytes never reached")
        url, hex_hash = found
        dictionary = b"".join(bodies)
        assert hashlib.sha256(dictionary).hexdigest() == hex_hash, "the window's bodies, newest last"
        status, headers, body = request(server.port, url, {**auth("alice"), "Accept-Encoding": "identity"})
        assert status == 200 and body == dictionary, (status, body[:100])
        assert headers["Use-As-Dictionary"] == f'match="/api/chats/{chat}/*", id="chat:{chat}"'
        post(server.port, chat, "bob", "Bob: the figures are in the shared folder.")
        path = f"/api/chats/{chat}/messages?since=0"
        status, headers, body = request(server.port, path, {**auth("alice"), "Accept-Encoding": "dcz",
                                                            "Available-Dictionary": available(dictionary)})
        assert status == 200 and headers["Content-Encoding"] == "dcz", dict(headers)
        assert dcz_with_zstd_cli(body, dictionary) == direct(api, path, "alice")
    finally:
        code = server.stop()
    assert code == 0, "graceful shutdown"
    with DCServe(dcserve_bin, ["--config", config]) as again:
        status, _, body = request(again.port, url, {**auth("alice"), "Accept-Encoding": "identity"})
        assert status == 200 and body == dictionary, "the store holds it after a graceful restart"
        status, _, _ = request(again.port, url, {**auth("bob"), "Accept-Encoding": "identity"})
        assert status == 404


def test_metrics_count_built_offered_fetched_used(proxy, first):
    status, _, body = proxy.get("/metrics", admin=True)
    assert status == 200
    text = body.decode()

    def value(name: str, labels: str) -> float:
        m = re.search(r"^" + re.escape(name) + r"\{" + labels + r"\} (\S+)$", text, re.M)
        assert m, f"{name}{{{labels}}} missing"
        return float(m.group(1))

    assert value("dcserve_history_dictionaries_built_total", 'rule="chats"') >= 2
    assert value("dcserve_history_offered_total", 'rule="chats"') >= 2
    assert value("dcserve_history_fetched_total", 'rule="chats"') >= 2
    assert value("dcserve_history_used_total", '(?:rule="chats", ?coding="dcz"|coding="dcz", ?rule="chats")') >= 3
    identity = value("dcserve_history_identity_bytes_total", 'rule="chats"')
    sent = value("dcserve_history_sent_bytes_total", 'rule="chats"')
    assert 0 < sent < identity


def test_history_configuration_errors_name_the_key(dcserve_bin, tmp_path):
    config = json.loads(pathlib.Path(history_config(tmp_path, "http://127.0.0.1:9")).read_text())
    config["dictionaries"]["chats"]["match"] = "/api/chats/*"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(config))
    r = subprocess.run([dcserve_bin, "serve", "--config", str(bad)], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "dictionaries.chats.match" in r.stderr, r.stderr
    config["dictionaries"]["chats"]["match"] = "/api/chats/:chat/*"
    config["dictionaries"]["chats"]["history"]["maxByte"] = 1
    bad.write_text(json.dumps(config))
    r = subprocess.run([dcserve_bin, "serve", "--config", str(bad)], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "dictionaries.chats.history.maxByte" in r.stderr, r.stderr
    r = subprocess.run([dcserve_bin, "serve", "--upstream", "http://127.0.0.1:9", "--history-dictionaries", "/api/chats/*"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "--history-dictionaries /api/chats/*" in r.stderr, r.stderr


def test_quick_mode_history_dictionaries(dcserve_bin, api, tmp_path):
    with DCServe(dcserve_bin, ["--upstream", api.base, "--store", str(tmp_path / "store"),
                               "--history-dictionaries", "/api/chats/:chat/*", "--partition-header", "Authorization"]) as s:
        # Default firstBuildBytes is 1 KiB: converse in chat 3 (bob + carol) until the first Link.
        url, hex_hash = converse_until_link(s.port, "3", "carol", "bob", rounds=80)
        status, headers, body = request(s.port, url, {**auth("carol"), "Accept-Encoding": "identity"})
        assert status == 200 and hashlib.sha256(body).hexdigest() == hex_hash
        assert headers["Use-As-Dictionary"] == 'match="/api/chats/3/*", id="chat:3"'
        assert re.fullmatch(r"private, max-age=(\d+)", headers["Cache-Control"])


def test_a_live_rule_over_the_chat_paths_leaves_the_history_dictionary_alone(dcserve_bin, api, tmp_path):
    """`--dictionaries '/api/*'` also covers the chat's dictionary URL: its response keeps the history
    dictionary's own scope, id and lifetime (it is not re-advertised as a dictionary of `/api/*`, which
    would tell clients to use a chat's dictionary on every API path for a day)."""
    with DCServe(dcserve_bin, ["--upstream", api.base, "--store", str(tmp_path / "store"),
                               "--dictionaries", "/api/*", "--history-dictionaries", "/api/chats/:chat/*",
                               "--partition-header", "Authorization"]) as s:
        url, hex_hash = converse_until_link(s.port, "3", "carol", "bob", rounds=80)
        status, headers, body = request(s.port, url, {**auth("carol"), "Accept-Encoding": "identity"})
        assert status == 200 and hashlib.sha256(body).hexdigest() == hex_hash
        assert headers["Use-As-Dictionary"] == 'match="/api/chats/3/*", id="chat:3"', dict(headers)
        seconds = int(re.fullmatch(r"private, max-age=(\d+)", headers["Cache-Control"]).group(1))
        assert 0 < seconds <= 3600


def test_a_dictionary_removed_by_retention_gets_a_plain_coding(dcserve_bin, api, tmp_path):
    """A store budget too small for the chat's first dictionary: housekeeping removes it while it is
    still the group's current one. A client naming it gets an ordinary compressed answer (as for an
    unknown hash), not the body uncompressed."""
    config = tmp_path / "tiny.json"
    config.write_text(json.dumps({
        "server": {"host": "127.0.0.1", "port": 0, "decisionHeader": True},
        "store": {"path": str(tmp_path / "store"), "maxBytes": 500, "housekeepingSeconds": 1},
        "upstreams": {"names": ["api"], "api": {"servers": [api.base]}},
        "routes": {"names": ["api"], "api": {"prefix": "/", "upstream": "api"}},
        "dictionaries": {"rules": ["chats"], "chats": {"match": "/api/chats/:chat/*", "partition": {"header": "Authorization"},
                                                         "history": {"enabled": True}}}}))
    with DCServe(dcserve_bin, ["--config", str(config)]) as s:
        url, hex_hash = converse_until_link(s.port, "2", "alice", "bob", rounds=80)
        deadline = time.monotonic() + 10
        while request(s.port, url, auth("alice"))[0] != 404 and time.monotonic() < deadline:
            time.sleep(0.2)  # housekeeping (every second) removes it
        assert request(s.port, url, auth("alice"))[0] == 404
        status, headers, body = request(s.port, "/api/chats/2/messages?since=0", {
            **auth("alice"), "Accept-Encoding": "dcb, dcz, br", "Available-Dictionary": available_hex(hex_hash)})
        assert status == 200 and headers["Content-Encoding"] == "br", dict(headers)
        assert "encoding-failed" not in headers["DCServe-Decision"]


def available_hex(hex_hash: str) -> str:
    return ":" + base64.b64encode(bytes.fromhex(hex_hash)).decode() + ":"
