"""A real browser: headless Chromium (Debian's package) against `dcserve serve` on http://localhost,
and for the dcz/dcb flows also on https://localhost (a self-signed certificate pinned with
--ignore-certificate-errors-spki-list; plain --ignore-certificate-errors would disable dictionaries).

Chromium must register a dictionary served by dcserve, send Available-Dictionary with the right hash
(read from the headers it actually sent: Network.requestWillBeSentExtraInfo), and decode dcz and dcb
responses; the page's own script checks the decoded text byte for byte (SHA-256 via WebCrypto).
match-dest is honoured, and a dictionary advertised with Link is fetched and then used.
"""
from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import pathlib
import time

import pytest

from chromium import CHROMIUM, Chromium
from dcserve_server import DCServe
from tls_support import self_signed, spki_pin

from paths import ROOT
V1 = (ROOT / "examples/site/static/app.v1.js").read_bytes()
V2 = (ROOT / "examples/site/static/app.v2.js").read_bytes()
NEWS_DICT = b"".join(b"<article><h2>Headline %d</h2><p>Common news boilerplate, navigation, footer.</p></article>\n" % i
                     for i in range(60))
ARTICLE = NEWS_DICT.replace(b"Headline 7", b"Breaking story")[:3000] + b"<p>Only in this article.</p>"

if not os.access(CHROMIUM, os.X_OK):
    pytest.fail(f"{CHROMIUM} is missing: `make test` installs Debian's chromium; install it with "
                "`apt-get install chromium` if this run could not", pytrace=False)


def available(data: bytes) -> str:
    return ":" + base64.b64encode(hashlib.sha256(data).digest()).decode() + ":"


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "site"
    for d in ("static", "dest", "news"):
        (root / d).mkdir(parents=True)
    (root / "index.html").write_text("<!doctype html><title>t</title><p>dcserve browser test</p>")
    (root / "static/app.v1.js").write_bytes(V1)
    (root / "static/app.v2.js").write_bytes(V2)
    (root / "dest/lib.v1.js").write_bytes(V1.replace(b"StoreFront", b"DestLib"))
    (root / "dest/lib.v2.js").write_bytes(V2.replace(b"StoreFront", b"DestLib"))
    (root / "news/index.html").write_text("<!doctype html><title>news</title><p>news front page</p>")
    (root / "news/article1.html").write_bytes(ARTICLE)
    news_dict = tmp_path / "news.dict"
    news_dict.write_bytes(NEWS_DICT)
    config = {
        "site": {"root": str(root)},
        "store": {"path": str(tmp_path / "store")},
        "compression": {"precompress": False},
        "dictionaries": {
            "rules": ["bundle", "dest"],
            "bundle": {"match": "/static/app.*.js", "maxAge": 3600},
            "dest": {"match": "/dest/lib.*.js", "matchDest": ["script"], "maxAge": 3600},
        },
        "outOfBand": {
            "names": ["news"],
            "news": {"file": str(news_dict), "path": "/dictionaries/news.dict", "match": "/news/article*",
                     "advertiseOn": "/news/", "maxAge": 3600},
        },
    }
    (tmp_path / "dcserve.json").write_text(json.dumps(config))
    return tmp_path / "dcserve.json"


CHECK_JS = """
(async () => {
  const r = await fetch(%(url)s, {cache: 'no-store'});
  const bytes = new Uint8Array(await r.arrayBuffer());
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return {status: r.status, length: bytes.length,
          sha256: Array.from(digest).map(b => b.toString(16).padStart(2, '0')).join('')};
})()
"""


def wait_for_dictionary(browser: Chromium, probe: str, tries: int = 60) -> dict:
    """Chromium stores dictionaries asynchronously: fetches `probe` (a path the dictionary's match
    covers that is not itself a dictionary, e.g. a 404) with unique queries until Chromium attaches
    Available-Dictionary; bounded. Returns the headers it sent."""
    for i in range(tries):
        url = f"{probe}?try={i}"
        browser.evaluate(f"fetch({json.dumps(url)}, {{cache: 'no-store'}}).then(r => r.status)")
        browser.pump(0.05)
        sent = browser.sent_headers(url)
        if sent and "available-dictionary" in sent[-1]:
            return sent[-1]
        time.sleep(0.25)
    raise AssertionError(f"Chromium never sent Available-Dictionary for {probe}")


def fetch_checked(browser: Chromium, url: str) -> dict:
    """Fetches `url` in the page; returns the sent and received headers and the page's own check of
    the decoded bytes (length and SHA-256 computed with WebCrypto)."""
    result = browser.evaluate(CHECK_JS % {"url": json.dumps(url)})
    browser.pump(0.1)
    sent, received = browser.sent_headers(url), browser.received_headers(url)
    assert sent and received, f"no network events for {url}"
    return {"sent": sent[-1], "received": received[-1], "page": result}


@contextlib.contextmanager
def server_and_browser(dcserve_bin: str, config: pathlib.Path, scheme: str, env: dict[str, str] | None = None):
    """dcserve with `config` and a Chromium; for https, an HTTPS listener with a fresh self-signed
    certificate that Chromium trusts by its SPKI pin. Yields (server, browser, origin)."""
    args, extra = ["--config", str(config)], []
    if scheme == "https":
        leaf = self_signed(config.parent / "tls")
        args += ["--tls-port", "0", "--tls-cert", str(leaf.cert), "--tls-key", str(leaf.key)]
        extra = [f"--ignore-certificate-errors-spki-list={spki_pin(leaf.cert)}"]
    with DCServe(dcserve_bin, args, env=env, tls=scheme == "https") as server, Chromium(extra_args=extra) as browser:
        port = server.tls_port if scheme == "https" else server.port
        yield server, browser, f"{scheme}://localhost:{port}"


def run_bundle_flow(browser: Chromium, server: DCServe, coding: str, origin: str | None = None) -> None:
    browser.navigate(f"{origin or f'http://localhost:{server.port}'}/index.html")
    v1 = browser.evaluate(CHECK_JS % {"url": json.dumps("/static/app.v1.js")})
    assert v1["sha256"] == hashlib.sha256(V1).hexdigest()
    assert wait_for_dictionary(browser, "/static/app.probe.js")["available-dictionary"] == available(V1)
    got = fetch_checked(browser, "/static/app.v2.js")
    assert got["sent"]["available-dictionary"] == available(V1)
    assert "dcb" in got["sent"]["accept-encoding"] and "dcz" in got["sent"]["accept-encoding"]
    assert got["received"].get("content-encoding") == coding, (got["received"], server.logs()[-3000:])
    assert got["page"]["status"] == 200
    assert got["page"]["length"] == len(V2) and got["page"]["sha256"] == hashlib.sha256(V2).hexdigest()


#: dcserve sends the smaller of dcb and dcz for small bodies (SmallBodyCodingComparison); the dcz
#: tests leave dcb out of the codings it produces, so Chromium's dcz decoding is what they exercise.
DCZ_ONLY = {"DCSERVE_COMPRESSION_PREFERENCE": "dcz,zstd,br,gzip"}


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_chromium_decodes_dcz(dcserve_bin, site, scheme):
    with server_and_browser(dcserve_bin, site, scheme, DCZ_ONLY) as (server, browser, origin):
        run_bundle_flow(browser, server, "dcz", origin)
        if scheme == "https":
            assert browser.evaluate("location.protocol") == "https:" and browser.evaluate("isSecureContext")


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_chromium_decodes_dcb_when_brotli_preferred(dcserve_bin, site, scheme):
    env = {"DCSERVE_COMPRESSION_PREFERENCE": "dcb,dcz,br,zstd,gzip"}
    with server_and_browser(dcserve_bin, site, scheme, env) as (server, browser, origin):
        run_bundle_flow(browser, server, "dcb", origin)


def test_match_dest_is_honoured(dcserve_bin, site):
    with DCServe(dcserve_bin, ["--config", str(site)], env=DCZ_ONLY) as server, Chromium() as browser:
        browser.navigate(f"http://localhost:{server.port}/index.html")
        load_script = """
        new Promise(resolve => { const s = document.createElement('script');
          s.src = %s; s.onload = () => resolve(true); s.onerror = () => resolve(false);
          document.head.appendChild(s); })
        """
        assert browser.evaluate(load_script % json.dumps("/dest/lib.v1.js")) is True
        v1 = (pathlib.Path(site).parent / "site/dest/lib.v1.js").read_bytes()
        # script loads of a matching (missing) probe path until Chromium attaches the dictionary
        for i in range(60):
            url = f"/dest/lib.probe.js?s={i}"
            assert browser.evaluate(load_script % json.dumps(url)) is False
            browser.pump(0.05)
            sent = browser.sent_headers(url)
            if sent and "available-dictionary" in sent[-1]:
                break
            time.sleep(0.25)
        else:
            raise AssertionError("script loads never carried Available-Dictionary")
        assert browser.evaluate(load_script % json.dumps("/dest/lib.v2.js")) is True
        browser.pump(0.1)
        assert browser.sent_headers("/dest/lib.v2.js")[-1]["available-dictionary"] == available(v1)
        assert browser.received_headers("/dest/lib.v2.js")[-1].get("content-encoding") == "dcz"
        assert browser.evaluate("typeof DestLib === 'object' && DestLib.version") == "1.1.0"
        # fetch() has destination "" and must not get it
        browser.evaluate(CHECK_JS % {"url": json.dumps("/dest/lib.v2.js?fetch=1")})
        browser.pump(0.1)
        sent = browser.sent_headers("/dest/lib.v2.js?fetch=1")
        assert sent and "available-dictionary" not in sent[-1], sent


def test_link_advertised_dictionary_is_fetched_and_used(dcserve_bin, site):
    with DCServe(dcserve_bin, ["--config", str(site)], env=DCZ_ONLY) as server, Chromium() as browser:
        browser.navigate(f"http://localhost:{server.port}/news/")
        assert wait_for_dictionary(browser, "/news/article-probe.html")["available-dictionary"] == available(NEWS_DICT)
        got = fetch_checked(browser, "/news/article1.html")
        assert got["sent"]["available-dictionary"] == available(NEWS_DICT)
        assert got["received"].get("content-encoding") == "dcz"
        assert got["page"]["sha256"] == hashlib.sha256(ARTICLE).hexdigest()
        dict_requests = browser.sent_headers("/dictionaries/news.dict")
        assert dict_requests, "Chromium did not fetch the Link-advertised dictionary"
