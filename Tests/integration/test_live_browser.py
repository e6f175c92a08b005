"""Headless Chromium through the reverse proxy: a page fetches `/latest_news` (the example
API sends `no-cache`; the rule's lifetime `max-age=0, stale-while-revalidate=86400` lets Chromium keep
it as a dictionary), the feed gets a new article, and the next fetch carries Available-Dictionary with
the previous response's hash, arrives as dcz, and the page checks the decoded bytes (WebCrypto SHA-256).
"""
from __future__ import annotations

import hashlib
import json
import os
import urllib.request

import pytest

from chromium import CHROMIUM, Chromium
from dcserve_server import DCServe
from test_browser import CHECK_JS, available, fetch_checked, wait_for_dictionary
from upstream_support import ExampleAPI

if not os.access(CHROMIUM, os.X_OK):
    pytest.fail(f"{CHROMIUM} is missing: install it with `apt-get install chromium`", pytrace=False)


def test_chromium_gets_latest_news_as_a_delta(dcserve_bin, tmp_path):
    with ExampleAPI() as api:
        config = {
            "server": {"host": "127.0.0.1", "port": 0},
            "store": {"path": str(tmp_path / "store")},
            "compression": {"precompress": False},
            "upstreams": {"names": ["api"], "api": {"servers": [api.base]}},
            "routes": {"names": ["api"], "api": {"prefix": "/", "upstream": "api"}},
            "dictionaries": {"rules": ["news"], "news": {
                "match": "/latest_news*", "resources": "/latest_news", "upstreamVersions": 4,
                "lifetime": "max-age=0, stale-while-revalidate=86400"}},
        }
        (tmp_path / "live.json").write_text(json.dumps(config))
        with DCServe(dcserve_bin, ["--config", str(tmp_path / "live.json")]) as server, Chromium() as browser:
            browser.navigate(f"http://localhost:{server.port}/api/echo")
            v1 = urllib.request.urlopen(api.base + "/latest_news", timeout=10).read()
            first = browser.evaluate(CHECK_JS % {"url": json.dumps("/latest_news")})
            assert first["sha256"] == hashlib.sha256(v1).hexdigest()
            assert wait_for_dictionary(browser, "/latest_news/probe")["available-dictionary"] == available(v1)
            urllib.request.urlopen(urllib.request.Request(api.base + "/latest_news/update", data=b"", method="POST"), timeout=10)
            today = urllib.request.urlopen(api.base + "/latest_news", timeout=10).read()
            assert today != v1
            got = fetch_checked(browser, "/latest_news")
            assert got["sent"]["available-dictionary"] == available(v1)
            # A delta either way: for a small body dcserve encodes both dictionary codings Chromium accepts and
            # sends the smaller (SmallBodyCodingComparison); the page checks the decoded bytes below.
            assert got["received"].get("content-encoding") in ("dcb", "dcz"), (got["received"], server.logs()[-3000:])
            assert got["page"]["status"] == 200
            assert got["page"]["length"] == len(today) and got["page"]["sha256"] == hashlib.sha256(today).hexdigest()
