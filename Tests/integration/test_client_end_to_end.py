"""The portable Swift client end to end against the release server in quick mode in front of the example
API, for the three seed cases — `/latest_news`, two users' calendars, a chat whose dictionary comes by
`Link` and is fetched with the user's credentials — through both app-facing paths: the AsyncHTTPClient
adapter, and an ordinary `URLSession` whose configuration lists `DictionaryURLProtocol` (on Linux the
protocol sends through AsyncHTTPClient: FoundationNetworking's libcurl refuses an unknown
Content-Encoding). The client decodes with its default, pure-Swift decoder.

Each response is checked against independent facts: the decoded body equals the upstream's bytes
(fetched directly from the example API), the dcz body as received decodes with Python `zstandard`
(raw-content dictionary) to the same bytes, its header names the previous version, and the client's
measurement (wire bytes, decoded bytes, dictionary) matches the wire (`Content-Length`, body length).
"""
from __future__ import annotations

import hashlib
import json
import os
import pathlib
import subprocess
import urllib.request

import pytest

from dcserve_server import DCServe
from decoders import dcz_with_python_zstandard
from test_history_dictionaries import converse_until_link
from upstream_support import ExampleAPI

from paths import ROOT
LIFETIME = "max-age=0, stale-while-revalidate=86400"


@pytest.fixture(scope="module")
def client_bin() -> str:
    path = os.environ.get("DCSERVE_CLIENT_E2E_BIN", str(ROOT / ".build/debug/dictionary-client-e2e"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} missing: run `make client-e2e` (make integration-test does)")
    return path


@pytest.fixture(scope="module")
def api():
    with ExampleAPI() as a:
        yield a


@pytest.fixture(scope="module")
def server(dcserve_bin, api, tmp_path_factory):
    store = tmp_path_factory.mktemp("client-e2e-store")
    with DCServe(dcserve_bin, ["--upstream", api.base, "--store", str(store),
                               "--dictionaries", "/latest_news", "--dictionaries", "/api/calendar",
                               "--history-dictionaries", "/api/chats/:chat/*",
                               "--partition-header", "Authorization", "--dictionary-lifetime", LIFETIME]) as s:
        yield s


def upstream(api: ExampleAPI, path: str, account: str | None = None, method: str = "GET") -> bytes:
    headers = {"Authorization": f"Bearer {account}"} if account else {}
    req = urllib.request.Request(api.base + path, headers=headers, method=method, data=b"" if method == "POST" else None)
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read()


class Client:
    """Runs the Swift driver with one transport and one persistent store."""

    def __init__(self, binary: str, transport: str, base: str, tmp: pathlib.Path):
        self.binary, self.transport, self.base = binary, transport, base
        self.store, self.out = tmp / "store", tmp / "out"
        self.out.mkdir()

    def run(self, *steps: str, options: tuple[str, ...] = ()) -> list[dict]:
        r = subprocess.run([self.binary, "--base", self.base, "--transport", self.transport, "--store", str(self.store),
                            "--out", str(self.out), *options, *steps], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]

    def get(self, name: str, path: str, account: str = "-") -> dict:
        (step,) = self.run("get", name, path, account)
        return self.files(step)

    def files(self, step: dict) -> dict:
        step["body"] = (self.out / f"{step['step']}.body").read_bytes()
        step["wire"] = (self.out / f"{step['step']}.wire").read_bytes()
        return step


def check_measurement(step: dict) -> None:
    """The client's numbers are the wire's: body length as received, its Content-Length, decoded size."""
    m = step["measurement"]
    assert step["status"] == 200
    assert m["wireBytes"] == len(step["wire"])
    if step["contentLength"] is not None:
        assert m["wireBytes"] == int(step["contentLength"])
    assert m["decodedBytes"] == len(step["body"]) == step["bodyBytes"]
    assert m["contentCodings"] == ([] if step["contentEncoding"] in (None, "identity") else
                                   [c.strip() for c in step["contentEncoding"].split(",")])
    assert m["decodeNanoseconds"] >= 0


def check_delta(step: dict, dictionary: bytes, expected: bytes) -> None:
    """A dcz delta against `dictionary` that decodes (here and independently) to `expected`."""
    check_measurement(step)
    assert step["contentEncoding"] == "dcz", step
    assert step["acceptEncoding"].split(", ")[-1] == "dcz" and "dcb" not in step["acceptEncoding"]
    assert step["measurement"]["dictionary"] == {"kind": "used", "hash": hashlib.sha256(dictionary).hexdigest(),
                                                 "id": step["measurement"]["dictionary"].get("id")}
    assert step["body"] == expected
    assert dcz_with_python_zstandard(step["wire"], dictionary) == expected
    assert len(step["wire"]) < len(expected) // 2, (len(step["wire"]), len(expected))


@pytest.fixture(params=["ahc", "urlprotocol"])
def client(request, client_bin, server, tmp_path) -> Client:
    return Client(client_bin, request.param, server.base, tmp_path)


def test_latest_news_delta(client, api):
    first = client.get("news1", "/latest_news")
    check_measurement(first)
    assert first["body"] == upstream(api, "/latest_news")
    assert first["availableDictionary"] is None and first["acceptEncoding"] == "zstd"
    upstream(api, "/latest_news/update", method="POST")
    second = client.get("news2", "/latest_news")
    check_delta(second, first["body"], upstream(api, "/latest_news"))


def test_two_users_calendars_stay_apart_and_logout_forgets(client, api):
    v1 = {user: client.get(f"cal1-{user}", "/api/calendar", user) for user in ("alice", "bob")}
    for user in v1:
        check_measurement(v1[user])
        assert v1[user]["body"] == upstream(api, "/api/calendar", user)
        upstream(api, "/api/calendar/update", user, method="POST")
    assert v1["alice"]["body"] != v1["bob"]["body"]
    for user in ("alice", "bob"):
        v2 = client.get(f"cal2-{user}", "/api/calendar", user)
        check_delta(v2, v1[user]["body"], upstream(api, "/api/calendar", user))
    # Logout: alice's dictionaries are gone, bob's stay.
    (cleared,) = client.run("clear", "alice")
    assert cleared["remaining"] == 0
    after = client.get("cal3-alice", "/api/calendar", "alice")
    assert after["availableDictionary"] is None and after["measurement"]["dictionary"]["kind"] == "notOffered"
    assert after["body"] == upstream(api, "/api/calendar", "alice")
    bob = client.get("cal3-bob", "/api/calendar", "bob")
    assert bob["availableDictionary"] is not None


@pytest.fixture(scope="module")
def chat_with_dictionary(server):
    """Chat 1 (alice and bob) after enough messages that dcserve offers a history dictionary by Link."""
    converse_until_link(server.port, "1", "alice", "bob")
    return "/api/chats/1/messages?since=2"


def test_chat_link_dictionary_fetched_with_the_users_credentials(client, api, chat_with_dictionary):
    path = chat_with_dictionary
    # Without the app's credentials the dictionary URL is refused (it belongs to alice's partition):
    # the fetch fails, is counted, nothing registers, and the next fetch names no dictionary.
    steps = client.run("get", "anon1", path, "alice", "wait-links", "get", "anon2", path, "alice",
                       options=("--link-credentials", "none"))
    assert steps[1] == {"step": "wait-links", "completed": 0, "failed": 1, "dropped": 0}
    assert steps[2]["availableDictionary"] is None and steps[2]["measurement"]["dictionary"]["kind"] == "notOffered"
    assert not list((client.store / "bodies").iterdir())
    steps = client.run("get", "chat1", path, "alice", "wait-links", "get", "chat2", path, "alice")
    first, links, second = client.files(steps[0]), steps[1], client.files(steps[2])
    check_measurement(first)
    assert first["body"] == upstream(api, path, "alice")
    # The Link-announced dictionary is served only to alice's partition: it registered, so the fetch
    # carried her Authorization.
    assert links == {"step": "wait-links", "completed": 1, "failed": 0, "dropped": 0}
    dictionary_hash = second["measurement"]["dictionary"].get("hash")
    assert second["measurement"]["dictionary"]["kind"] == "used", second
    dictionaries = list((client.store / "bodies").iterdir())
    (dictionary,) = [d.read_bytes() for d in dictionaries if hashlib.sha256(d.read_bytes()).hexdigest() == dictionary_hash]
    check_delta(second, dictionary, upstream(api, path, "alice"))


def test_linux_urlsession_alone_cannot_receive_dcz(client_bin, server, api, tmp_path):
    """Why the URLProtocol path sends through AsyncHTTPClient on Linux: the same decorated request
    through a plain FoundationNetworking URLSession fails, because libcurl (told by
    swift-corelibs-foundation to decode every response) does not know the dcz coding."""
    c = Client(client_bin, "ahc", server.base, tmp_path)
    c.get("first", "/latest_news")
    upstream(api, "/latest_news/update", method="POST")
    (plain,) = c.run("plain-urlsession", "/latest_news", "-")
    assert plain["availableDictionary"] is not None
    assert "Unrecognized content encoding type" in plain.get("error", ""), plain
    # The same request through the client's own transport is a dcz delta.
    assert c.get("second", "/latest_news")["contentEncoding"] == "dcz"
