"""History dictionaries with Chromium's Accept-Encoding (`gzip, deflate, br, zstd, dcb, dcz`):
a small message fetch, and the next dictionary's download (its URL lies in the chat's scope, so it is
fetched naming the current dictionary), each come as the smaller of dcb and dcz. Sizes are checked
against the other coding requested alone (served from the variant cache: same bytes), bodies are
decoded with the brotli and zstd CLIs. A plain small fetch (no dictionary yet) comes as the smaller of
br and zstd the same way.
"""
from __future__ import annotations

import hashlib
import json
import pathlib

from dcserve_server import DCServe
from decoders import dcb_with_brotli_cli, dcz_with_zstd_cli, decode_plain
from test_history_dictionaries import auth, available, converse_until_link, direct, history_config, post, request
from upstream_support import ExampleAPI

CHROMIUM = "gzip, deflate, br, zstd, dcb, dcz"


def decode(coding: str, body: bytes, dictionary: bytes, brotli_cli: str) -> bytes:
    assert coding in ("dcb", "dcz"), coding
    return dcb_with_brotli_cli(body, dictionary, brotli_cli) if coding == "dcb" else dcz_with_zstd_cli(body, dictionary)


def smaller_of_both(port: int, path: str, dictionary: bytes, brotli_cli: str) -> tuple[str, bytes, dict[str, int]]:
    """Fetches `path` as Chromium would (naming `dictionary`), then with dcb and dcz alone; checks the
    Chromium answer is the smaller one byte for byte. Returns (coding, decoded body, sizes)."""
    offer = {**auth("alice"), "Available-Dictionary": available(dictionary)}
    status, headers, sent = request(port, path, {**offer, "Accept-Encoding": CHROMIUM})
    assert status == 200, status
    chosen = headers["Content-Encoding"]
    decoded = decode(chosen, sent, dictionary, brotli_cli)
    bodies = {}
    for coding in ("dcb", "dcz"):
        status, headers, body = request(port, path, {**offer, "Accept-Encoding": coding})
        assert status == 200 and headers["Content-Encoding"] == coding
        assert decode(coding, body, dictionary, brotli_cli) == decoded
        bodies[coding] = body
    sizes = {c: len(b) for c, b in bodies.items()}
    assert len(sent) == min(sizes.values()), (chosen, len(sent), sizes)
    assert sent == bodies[chosen]
    return chosen, decoded, sizes


def test_chromium_gets_the_smaller_of_dcb_and_dcz_for_messages_and_the_next_dictionary(dcserve_bin, tmp_path, brotli_cli):
    with ExampleAPI() as api:
        config = json.loads(pathlib.Path(history_config(tmp_path, api.base)).read_text())
        # fast == best: no background re-encode changes a cached size during the test.
        config["compression"]["levels"] = {"dcb": {"fast": 11, "best": 11}, "dcz": {"fast": 19, "best": 19}}
        (tmp_path / "codings.json").write_text(json.dumps(config))
        with DCServe(dcserve_bin, ["--config", str(tmp_path / "codings.json")]) as s:
            url, hex_hash = converse_until_link(s.port, "1", "alice", "bob")
            status, _, first = request(s.port, url, {**auth("alice"), "Accept-Encoding": "identity"})
            assert status == 200 and hashlib.sha256(first).hexdigest() == hex_hash

            post(s.port, "1", "bob", "Thursday works. I will bring the minutes and the budget figures.")
            path = "/api/chats/1/messages?since=3"
            coding, body, sizes = smaller_of_both(s.port, path, first, brotli_cli)
            assert body == direct(api, path, "alice")
            print("message fetch:", sizes, "->", coding)

            next_url, next_hex = converse_until_link(s.port, "1", "alice", "bob", previous=hex_hash)
            coding, second, sizes = smaller_of_both(s.port, next_url, first, brotli_cli)
            assert hashlib.sha256(second).hexdigest() == next_hex
            assert min(sizes.values()) < len(second) // 2, f"the next dictionary ({len(second)} B) came as a delta: {sizes}"
            print("next dictionary:", len(second), "B as", sizes, "->", coding)


def test_chromium_gets_the_smaller_of_br_and_zstd_for_a_small_plain_fetch(dcserve_bin, tmp_path, brotli_cli):
    """Before any dictionary: Chromium's `gzip, deflate, br, zstd` (zstd preferred by the server) gets
    the smaller of br and zstd, checked against each requested alone, twice (the second time both sizes
    are cached and negotiation decides alone), decoded with the brotli CLI and python-zstandard."""
    with ExampleAPI() as api:
        config = json.loads(pathlib.Path(history_config(tmp_path, api.base)).read_text())
        config["compression"]["levels"] = {"br": {"fast": 5, "best": 5}, "zstd": {"fast": 3, "best": 3}}
        (tmp_path / "plain.json").write_text(json.dumps(config))
        with DCServe(dcserve_bin, ["--config", str(tmp_path / "plain.json")]) as s:
            path = "/api/chats/2/messages?since=0"
            expected = direct(api, path, "alice")
            assert 256 < len(expected) < 16384, len(expected)
            sent = []
            for _ in range(2):
                status, headers, body = request(s.port, path, {**auth("alice"), "Accept-Encoding": "gzip, deflate, br, zstd"})
                assert status == 200 and "Link" not in headers
                assert decode_plain(body, headers["Content-Encoding"], brotli_cli) == expected
                sent.append((headers["Content-Encoding"], body))
            alone = {}
            for coding in ("br", "zstd"):
                status, headers, body = request(s.port, path, {**auth("alice"), "Accept-Encoding": coding})
                assert status == 200 and headers["Content-Encoding"] == coding
                assert decode_plain(body, coding, brotli_cli) == expected
                alone[coding] = body
            smaller = min(alone, key=lambda c: (len(alone[c]), c != "zstd"))
            assert sent == [(smaller, alone[smaller])] * 2, ([(c, len(b)) for c, b in sent], {c: len(b) for c, b in alone.items()})
            assert smaller == "br", f"chat JSON is smaller as brotli here: { {c: len(b) for c, b in alone.items()} }"
