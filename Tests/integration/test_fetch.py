"""`dcserve fetch`, the RFC 9842 client, against the release server and against an independent Python
origin (dictionary_origin.py: standard library + zstandard + the brotli CLI).

Each test gives fetch its own `--store` directory, so runs never share dictionaries.
"""
from __future__ import annotations

import base64
import hashlib
import json
import pathlib
import subprocess
import time

import pytest

from dcserve_server import DCServe
from dictionary_origin import DictionaryOrigin
from tls_support import make_ca, make_leaf


def bundle(version: int) -> bytes:
    lines = [f"export function widget{i}(props) {{ return render('widget-{i}', props, {i * 7 % 13}); }}\n"
             for i in range(400)]
    lines.insert(200, f"export const VERSION = 'v{version}.0.{version * 3}';\n")
    if version > 1:
        lines.append("export function addedInV2() { return 'new feature'; }\n")
    return "".join(lines).encode()


V1, V2 = bundle(1), bundle(2)
NEWS_SHORT = b"short dictionary: " + b"<article><h1>headline</h1><p>common news boilerplate</p></article>\n" * 20
NEWS_LONG = b"long dictionary: " + b"<article class='story'><h2>Story</h2><p>article boilerplate text</p></article>\n" * 20
ARTICLE = b"<!doctype html>" + b"<article class='story'><h2>Story</h2><p>article boilerplate text</p></article>\n" * 30


def available(data: bytes) -> str:
    return ":" + base64.b64encode(hashlib.sha256(data).digest()).decode() + ":"


def fetch(dcserve_bin, store: pathlib.Path, url: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run([dcserve_bin, "fetch", "--store", str(store), "--json", url, *args],
                         capture_output=True, timeout=60)
    if check:
        assert out.returncode == 0, out.stderr.decode(errors="replace")
    return out


def report(out: subprocess.CompletedProcess) -> dict:
    return json.loads(out.stdout)


def sent(r: dict) -> dict[str, str]:
    return {k.lower(): v for k, v in r["main"]["requestFields"]}


def received(r: dict) -> dict[str, str]:
    return {k.lower(): v for k, v in r["main"]["responseFields"]}


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "site"
    for d in ("static", "news"):
        (root / d).mkdir(parents=True)
    (root / "static/app.v1.js").write_bytes(V1)
    (root / "static/app.v2.js").write_bytes(V2)
    (root / "news/article1.html").write_bytes(ARTICLE)
    (root / "news/index.html").write_bytes(ARTICLE.replace(b"Story", b"Front"))
    (tmp_path / "short.dict").write_bytes(NEWS_SHORT)
    (tmp_path / "long.dict").write_bytes(NEWS_LONG)
    return tmp_path


def config(site: pathlib.Path, max_age: int = 3600, tls: dict | None = None) -> str:
    cfg = {
        "site": {"root": str(site / "site")},
        "store": {"path": str(site / "server-store")},
        "compression": {"precompress": False},
        "server": {"accessLog": False},
        "dictionaries": {"rules": ["bundle"], "bundle": {"match": "/static/app.*.js", "maxAge": max_age}},
        "outOfBand": {
            "names": ["short", "long"],
            "short": {"file": str(site / "short.dict"), "path": "/dictionaries/short.dict", "match": "/news/*",
                      "advertiseOn": "/unused/", "maxAge": 3600},
            "long": {"file": str(site / "long.dict"), "path": "/dictionaries/long.dict", "match": "/news/article*",
                     "advertiseOn": "/unused/", "maxAge": 3600},
        },
    }
    if tls:
        cfg["tls"] = tls
    path = site / "dcserve.json"
    path.write_text(json.dumps(cfg))
    return str(path)


def check_delta(dcserve_bin, store, base: str, tmp_path, *extra: str) -> dict:
    r1 = report(fetch(dcserve_bin, store, base + "/static/app.v1.js", *extra))
    assert r1["main"]["registered"]["hash"] == hashlib.sha256(V1).hexdigest()
    assert r1["main"]["registered"]["match"] == "/static/app.*.js"
    assert "available-dictionary" not in sent(r1)
    assert "dcb" not in sent(r1)["accept-encoding"] and "dcz" not in sent(r1)["accept-encoding"]
    out = tmp_path / "v2.js"
    r2 = report(fetch(dcserve_bin, store, base + "/static/app.v2.js", "-o", str(out), *extra))
    assert sent(r2)["available-dictionary"] == available(V1)
    assert sent(r2)["accept-encoding"].endswith("dcb, dcz")
    assert received(r2)["content-encoding"] in ("dcb", "dcz")
    assert r2["main"]["decodedWith"] == hashlib.sha256(V1).hexdigest()
    assert out.read_bytes() == V2
    assert r2["main"]["decodedBytes"] == len(V2)
    assert r2["main"]["wireBytes"] < len(V2) // 20, r2["main"]["wireBytes"]
    return r2


@pytest.mark.parametrize("transport", ["eventloop", "socket"])
def test_v1_registers_and_v2_arrives_as_a_delta_over_http(dcserve_bin, site, tmp_path, transport):
    with DCServe(dcserve_bin, ["--config", config(site)]) as server:
        r2 = check_delta(dcserve_bin, tmp_path / "store", server.base, tmp_path, "--transport", transport)
        # v2 also matches the rule: it is registered too, replacing v1 (same match, same match-dest).
        assert r2["main"]["registered"]["hash"] == hashlib.sha256(V2).hexdigest()
        entries = json.loads((tmp_path / "store/index.json").read_text())
        assert [e["hashHex"] for e in entries] == [hashlib.sha256(V2).hexdigest()]


@pytest.mark.parametrize("transport", ["eventloop", "socket"])
def test_delta_over_https_with_cacert(dcserve_bin, site, tmp_path, transport):
    ca = make_ca(tmp_path / "pki")
    leaf = make_leaf(ca, tmp_path / "pki", "leaf")
    cfg = config(site, tls={"port": 0, "certificate": str(leaf.cert), "key": str(leaf.key)})
    with DCServe(dcserve_bin, ["--config", cfg], tls=True) as server:
        base = f"https://localhost:{server.tls_port}"
        check_delta(dcserve_bin, tmp_path / "store", base, tmp_path, "--cacert", str(ca.cert), "--transport", transport)
        # Without the CA the handshake fails loudly.
        bad = fetch(dcserve_bin, tmp_path / "store", base + "/static/app.v2.js", "--transport", transport, check=False)
        assert bad.returncode != 0 and b"certificate" in bad.stderr, bad.stderr


def test_expired_dictionary_is_not_named(dcserve_bin, site, tmp_path):
    with DCServe(dcserve_bin, ["--config", config(site, max_age=1)]) as server:
        r1 = report(fetch(dcserve_bin, tmp_path / "store", server.base + "/static/app.v1.js"))
        assert r1["main"]["registered"]["hash"] == hashlib.sha256(V1).hexdigest()
        time.sleep(2.2)  # max-age=1: expired once this returns (bounded wait, no timing assertion)
        r2 = report(fetch(dcserve_bin, tmp_path / "store", server.base + "/static/app.v2.js"))
        assert "available-dictionary" not in sent(r2)
        assert "dcz" not in sent(r2)["accept-encoding"]
        assert received(r2).get("content-encoding", "identity") not in ("dcb", "dcz")


def test_longer_match_wins(dcserve_bin, site, tmp_path):
    store = tmp_path / "store"
    with DCServe(dcserve_bin, ["--config", config(site)]) as server:
        for name, data in (("short", NEWS_SHORT), ("long", NEWS_LONG)):
            r = report(fetch(dcserve_bin, store, f"{server.base}/dictionaries/{name}.dict"))
            assert r["main"]["registered"]["hash"] == hashlib.sha256(data).hexdigest(), r["main"]
        article = tmp_path / "article.html"
        r = report(fetch(dcserve_bin, store, server.base + "/news/article1.html", "-o", str(article)))
        assert sent(r)["available-dictionary"] == available(NEWS_LONG)
        assert r["main"]["dictionary"]["match"] == "/news/article*"
        assert "2 candidates" in r["main"]["reason"]
        assert article.read_bytes() == ARTICLE
        r = report(fetch(dcserve_bin, store, server.base + "/news/index.html"))
        assert sent(r)["available-dictionary"] == available(NEWS_SHORT)


def test_partition_keeps_two_accounts_apart(dcserve_bin, site, tmp_path):
    store = tmp_path / "store"
    with DCServe(dcserve_bin, ["--config", config(site)]) as server:
        report(fetch(dcserve_bin, store, server.base + "/static/app.v1.js", "--partition", "alice"))
        bob = report(fetch(dcserve_bin, store, server.base + "/static/app.v2.js", "--partition", "bob"))
        assert "available-dictionary" not in sent(bob)
        alice = report(fetch(dcserve_bin, store, server.base + "/static/app.v2.js", "--partition", "alice"))
        assert sent(alice)["available-dictionary"] == available(V1)


def test_verbose_describes_the_exchange(dcserve_bin, site, tmp_path):
    store = tmp_path / "store"
    with DCServe(dcserve_bin, ["--config", config(site)]) as server:
        subprocess.run([dcserve_bin, "fetch", "--store", str(store), "-o", str(tmp_path / "v1"), server.base + "/static/app.v1.js"],
                       check=True, capture_output=True, timeout=60)
        out = subprocess.run([dcserve_bin, "fetch", "-v", "--store", str(store), server.base + "/static/app.v2.js"],
                             capture_output=True, timeout=60)
        assert out.returncode == 0 and out.stdout == V2
        err = out.stderr.decode()
        assert f"> Available-Dictionary: {available(V1)}" in err
        assert "* dictionary: match \"/static/app.*.js\" matches /static/app.v2.js" in err
        assert "wire bytes →" in err and f"{len(V2)} decoded bytes" in err
        assert "* registered dictionary " + hashlib.sha256(V2).hexdigest() in err


@pytest.mark.parametrize("coding", ["dcz", "dcb"])
def test_interoperates_with_an_independent_python_origin(dcserve_bin, brotli_cli, tmp_path, coding):
    payload = b"shared prefix " * 50 + b"payload specific to this response " * 40
    dictionary = b"shared prefix " * 60 + b"payload specific " * 20
    store = tmp_path / "store"
    with DictionaryOrigin(dictionary, {"x": payload}, brotli_cli, coding=coding) as origin:
        # Out of band: the page's Link makes fetch retrieve and register the dictionary.
        r = report(fetch(dcserve_bin, store, origin.base + "/page"))
        assert r["main"]["links"] == [origin.base + "/dict.txt"]
        assert r["links"][0]["registered"]["id"] == "py-dict"
        out = tmp_path / "x"
        r = report(fetch(dcserve_bin, store, origin.base + "/data/x", "-o", str(out)))
        assert out.read_bytes() == payload
        assert received(r)["content-encoding"] == coding
        path, headers = origin.requests[-1]
        assert path == "/data/x"
        assert headers["available-dictionary"] == available(dictionary)
        assert headers["dictionary-id"] == '"py-dict"'
        assert headers["accept-encoding"] == "gzip, br, zstd, dcb, dcz"


@pytest.mark.parametrize("coding", ["dcz", "dcb"])
@pytest.mark.parametrize("mode,message", [("wrong-hash", b"advertised"), ("corrupt", b"decoding failed")])
def test_bad_dictionary_response_fails_loudly(dcserve_bin, brotli_cli, tmp_path, coding, mode, message):
    dictionary = b"dictionary text " * 100
    payload = b"dictionary text " * 50 + b"something else entirely " * 30
    store = tmp_path / "store"
    with DictionaryOrigin(dictionary, {"x": payload}, brotli_cli, coding=coding, mode=mode) as origin:
        report(fetch(dcserve_bin, store, origin.base + "/dict.txt"))
        out = tmp_path / "x"
        bad = fetch(dcserve_bin, store, origin.base + "/data/x", "-o", str(out), check=False)
        assert bad.returncode != 0
        assert b"response dropped" in bad.stderr and message in bad.stderr, bad.stderr
        assert not out.exists()
        # The failure is not retried silently: exactly one request for the resource.
        assert [p for p, _ in origin.requests].count("/data/x") == 1
