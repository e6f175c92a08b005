"""Dictionary transport end to end against the real binary: stored dictionaries and dcb/dcz deltas,
decoded by independent tools, across a redeploy, a restart, a corrupted store and in-place updates."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import time

import pytest

import store_records
from dcserve_server import DCServe
from decoders import (dcb_with_brotli_cli, dcz_with_python_zstandard, dcz_with_zstd_cli,
                      decode_plain)

from paths import ROOT
EXAMPLE = ROOT / "examples/site"
V1 = (EXAMPLE / "static/app.v1.js").read_bytes()
V2 = (EXAMPLE / "static/app.v2.js").read_bytes()


def available(data: bytes) -> str:
    return ":" + base64.b64encode(hashlib.sha256(data).digest()).decode() + ":"


def vary_members(headers) -> set[str]:
    return {v.strip().lower() for v in ",".join(headers.get_all("Vary") or []).split(",") if v.strip()}


@pytest.fixture
def site(tmp_path):
    """A document root, a store directory and a config naming them (bundle + news rules)."""
    root = tmp_path / "site"
    (root / "static").mkdir(parents=True)
    (root / "static/app.v1.js").write_bytes(V1)
    (root / "news.html").write_bytes(b"<html><body>" + b"<p>Yesterday's headline number %d</p>" * 40 + b"</body></html>")
    store = tmp_path / "store"
    config = {
        "site": {"root": str(root)},
        "store": {"path": str(store)},
        "compression": {"precompress": False},
        "dictionaries": {
            "rules": ["bundle", "news"],
            "bundle": {"match": "/static/app.*.js", "id": "$path", "maxAge": 86400},
            "news": {"match": "/news.html", "maxAge": 600},
        },
    }
    cfg = tmp_path / "dcserve.json"
    cfg.write_text(json.dumps(config))
    return {"root": root, "store": store, "config": str(cfg)}


def serve(dcserve_bin, site, env=None):
    return DCServe(dcserve_bin, ["--config", site["config"]], env=env)


def test_dictionary_response_is_marked_and_fresh(dcserve_bin, site):
    with serve(dcserve_bin, site) as s:
        status, h, body = s.get("/static/app.v1.js", {"Accept-Encoding": "identity"})
        assert status == 200 and body == V1
        uad = h["Use-As-Dictionary"]
        assert 'match="/static/app.*.js"' in uad and 'id="/static/app.v1.js"' in uad, uad
        assert "max-age=86400" in h["Cache-Control"]
        assert {"accept-encoding", "available-dictionary"} <= vary_members(h)
        # stored by hash, with metadata
        assert store_records.blob(site["store"], hashlib.sha256(V1).hexdigest()) == V1


def test_delta_after_redeploy_and_restart(dcserve_bin, site, brotli_cli):
    with serve(dcserve_bin, site) as s:
        assert s.get("/static/app.v1.js")[0] == 200
    # redeploy: v1 is gone, v2 is new
    os.unlink(site["root"] / "static/app.v1.js")
    (site["root"] / "static/app.v2.js").write_bytes(V2)
    for restart in range(2):
        with serve(dcserve_bin, site) as s:
            status, h, body = s.get("/static/app.v2.js", {"Accept-Encoding": "gzip, br, zstd, dcz",
                                                          "Available-Dictionary": available(V1)})
            assert status == 200 and h["Content-Encoding"] == "dcz", (h, s.logs())
            assert dcz_with_zstd_cli(body, V1) == V2
            assert dcz_with_python_zstandard(body, V1) == V2
            assert len(body) < len(V2) // 4
            # the cross-origin gate decided this variant: shared caches must key on its inputs
            assert {"sec-fetch-site", "sec-fetch-mode", "origin"} <= vary_members(h)
            status, h, body = s.get("/static/app.v2.js", {"Accept-Encoding": "gzip, br, dcb",
                                                          "Available-Dictionary": available(V1)})
            assert status == 200 and h["Content-Encoding"] == "dcb"
            assert dcb_with_brotli_cli(body, V1, brotli_cli) == V2
            assert {"accept-encoding", "available-dictionary"} <= vary_members(h)


def test_unknown_hash_gets_ordinary_coding_with_same_vary(dcserve_bin, site, brotli_cli):
    (site["root"] / "static/app.v2.js").write_bytes(V2)
    with serve(dcserve_bin, site) as s:
        for ae, expected in [("br, zstd, dcb, dcz", None), ("gzip, dcz", "gzip"), ("zstd, dcb", "zstd"),
                             ("br, dcb", "br"), ("identity", None)]:
            status, h, body = s.get("/static/app.v2.js", {"Accept-Encoding": ae,
                                                          "Available-Dictionary": available(b"never served")})
            coding = h.get("Content-Encoding", "identity")
            assert coding not in ("dcb", "dcz")
            if expected:
                assert coding == expected, (ae, coding)
            assert decode_plain(body, coding, brotli_cli) == V2
            assert {"accept-encoding", "available-dictionary"} <= vary_members(h)


def test_etag_and_304_per_variant(dcserve_bin, site):
    (site["root"] / "static/app.v2.js").write_bytes(V2)
    with serve(dcserve_bin, site) as s:
        s.get("/static/app.v1.js")
        variants = {
            "identity": {"Accept-Encoding": "identity"},
            "gzip": {"Accept-Encoding": "gzip"},
            "dcz": {"Accept-Encoding": "gzip, dcz", "Available-Dictionary": available(V1)},
            "dcb": {"Accept-Encoding": "gzip, dcb", "Available-Dictionary": available(V1)},
        }
        etags = {}
        for name, headers in variants.items():  # let background best-level encodes finish first
            s.get("/static/app.v2.js", headers)
        time.sleep(2)
        for name, headers in variants.items():
            status, h, _ = s.get("/static/app.v2.js", headers)
            assert status == 200 and h.get("Content-Encoding", "identity") == name
            etags[name] = h["ETag"]
        assert len(set(etags.values())) == len(etags), etags
        for name, headers in variants.items():
            for other, etag in etags.items():
                status, h, body = s.get("/static/app.v2.js", {**headers, "If-None-Match": etag})
                if other == name:
                    assert status == 304 and body == b"" and h["ETag"] == etag, (name, other)
                    assert {"accept-encoding", "available-dictionary"} <= vary_members(h)
                else:
                    assert status == 200, (name, other)


def test_corrupted_store_file_is_never_used(dcserve_bin, site):
    with serve(dcserve_bin, site) as s:
        s.get("/static/app.v1.js")
    digest = hashlib.sha256(V1).hexdigest()
    data = bytearray(store_records.blob(site["store"], digest))
    data[100] ^= 0xFF
    store_records.replace_blob(site["store"], digest, bytes(data))
    os.unlink(site["root"] / "static/app.v1.js")
    (site["root"] / "static/app.v2.js").write_bytes(V2)
    with serve(dcserve_bin, site) as s:
        status, h, body = s.get("/static/app.v2.js", {"Accept-Encoding": "dcz, dcb",
                                                      "Available-Dictionary": available(V1)})
        assert status == 200 and h.get("Content-Encoding", "identity") == "identity" and body == V2
        assert store_records.blob(site["store"], digest) is None, "corrupted dictionary left in place"
        assert "quarantin" in s.logs().lower()


def test_latest_news_in_place_update_gives_delta(dcserve_bin, site, brotli_cli):
    news = site["root"] / "news.html"
    yesterday = news.read_bytes()
    with serve(dcserve_bin, site) as s:
        status, h, body = s.get("/news.html")
        assert status == 200 and body == yesterday and 'match="/news.html"' in h["Use-As-Dictionary"]
        today = yesterday.replace(b"Yesterday", b"Today").replace(b"number 1", b"number 2")
        tmp = news.with_suffix(".tmp")
        tmp.write_bytes(today)
        os.replace(tmp, news)
        status, h, body = s.get("/news.html", {"Accept-Encoding": "dcz", "Available-Dictionary": available(yesterday)})
        assert status == 200 and h["Content-Encoding"] == "dcz"
        assert dcz_with_zstd_cli(body, yesterday) == today
        # today's version is itself a dictionary now
        assert 'match="/news.html"' in h["Use-As-Dictionary"]


def test_quick_mode_serves_deltas_without_config(dcserve_bin, tmp_path, brotli_cli):
    root = tmp_path / "root"
    (root / "js").mkdir(parents=True)
    (root / "js/app.1.js").write_bytes(V1)
    (root / "js/app.2.js").write_bytes(V2)
    store = tmp_path / "store"
    with DCServe(dcserve_bin, ["--root", str(root), "--dictionaries", "/js/app.*.js", "--store", str(store)]) as s:
        status, h, _ = s.get("/js/app.1.js")
        assert status == 200 and 'match="/js/app.*.js"' in h["Use-As-Dictionary"]
        status, h, body = s.get("/js/app.2.js", {"Accept-Encoding": "dcb", "Available-Dictionary": available(V1)})
        assert h["Content-Encoding"] == "dcb"
        assert dcb_with_brotli_cli(body, V1, brotli_cli) == V2
    assert store_records.blob(store, hashlib.sha256(V1).hexdigest()) == V1


def test_head_and_range_stay_correct(dcserve_bin, site):
    (site["root"] / "static/app.v2.js").write_bytes(V2)
    with serve(dcserve_bin, site) as s:
        s.get("/static/app.v1.js")
        hdrs = {"Accept-Encoding": "dcz", "Available-Dictionary": available(V1)}
        # A background re-encode may replace the fast variant (other bytes, the same weak ETag) between
        # two requests: compare a HEAD with a GET once the variant is settled.
        for _ in range(50):
            status, h, body = s.get("/static/app.v2.js", hdrs, method="HEAD")
            _, g, gbody = s.get("/static/app.v2.js", hdrs)
            if h["Content-Length"] == str(len(gbody)):
                break
            time.sleep(0.1)
        assert status == 200 and body == b"" and h["Content-Encoding"] == "dcz"
        assert h["ETag"] == g["ETag"] and h["Content-Length"] == str(len(gbody))
        status, h, body = s.get("/static/app.v2.js", {**hdrs, "Range": "bytes=0-9"})
        assert status == 206 and body == V2[:10] and h.get("Content-Encoding", "identity") == "identity"
        # The Cache-Control a 200 gets (RFC 9110 §15.3.7), also on a 200 that ignored a multi-range.
        assert h["Cache-Control"] == g["Cache-Control"], (dict(h), dict(g))
        status, h, body = s.get("/static/app.v2.js", {**hdrs, "Range": "bytes=0-1,5-6"})
        assert status in (200, 206) and h["Cache-Control"] == g["Cache-Control"], dict(h)


def test_invalid_config_is_refused_with_key(dcserve_bin, tmp_path):
    cfg = tmp_path / "bad.json"
    cfg.write_text(json.dumps({"dictionaries": {"rules": ["x"], "x": {"match": "/(a|b)/*"}}}))
    import subprocess
    r = subprocess.run([dcserve_bin, "serve", "--config", str(cfg), "--port", "0"], capture_output=True, timeout=30)
    assert r.returncode != 0
    assert b"dictionaries.x.match" in r.stderr, r.stderr


def test_quick_mode_names_the_bad_pattern(dcserve_bin, tmp_path):
    import subprocess
    r = subprocess.run([dcserve_bin, "serve", "--root", str(tmp_path), "--port", "0", "--dictionaries", "/js/(a|b).js"],
                       capture_output=True, timeout=30)
    assert r.returncode != 0 and r.stdout == b""
    assert b"--dictionaries /js/(a|b).js" in r.stderr and b"regexp groups" in r.stderr, r.stderr



def test_large_resources_are_encoded_off_the_loop_and_stay_correct(dcserve_bin, site, brotli_cli):
    """Bodies of 64 KiB and more that the memo cannot answer are processed on a worker queue (the
    event loop keeps serving other connections). The answers must be the same: the large v1 becomes a
    stored dictionary, a large v2 arrives as dcz/dcb that independent decoders restore, while small
    requests on other connections interleave with them."""
    import random
    rng = random.Random(7)
    words = [bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(4000)]
    big_v1 = b"// large bundle v1\n" + b" ".join(rng.choice(words) for _ in range(60000))
    big_v2 = big_v1.replace(b"// large bundle v1", b"// large bundle v2", 1)[:200000] + b"\n// tail\n" + big_v1[200000:]
    assert len(big_v1) > 300_000
    (site["root"] / "static/app.big1.js").write_bytes(big_v1)
    (site["root"] / "static/app.big2.js").write_bytes(big_v2)
    with serve(dcserve_bin, site) as s:
        status, h, body = s.get("/static/app.big1.js", {"Accept-Encoding": "identity"})
        assert status == 200 and body == big_v1 and "Use-As-Dictionary" in h
        assert store_records.blob(site["store"], hashlib.sha256(big_v1).hexdigest()) == big_v1
        for coding, decode in (("dcz", lambda b: dcz_with_zstd_cli(b, big_v1)),
                               ("dcb", lambda b: dcb_with_brotli_cli(b, big_v1, brotli_cli))):
            for _ in range(2):  # a miss (encoded now), then a memo or cache hit
                status, h, body = s.get("/static/app.big2.js", {"Accept-Encoding": coding,
                                                               "Available-Dictionary": available(big_v1)})
                assert status == 200 and h["Content-Encoding"] == coding, h
                assert decode(body) == big_v2
                assert len(body) < len(big_v2) // 20
                small = s.get("/static/app.v1.js", {"Accept-Encoding": "identity"})
                assert small[0] == 200 and small[2] == V1
