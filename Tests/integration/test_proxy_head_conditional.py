"""Proxied HEAD and conditional requests, through the release binary in front of the example API
(examples/api): a HEAD announces the length a GET would have, and `If-None-Match` /
`If-Modified-Since` reach the upstream when dcserve cannot change the response (no dictionary rule
covers the path, the client accepts only identity), and are answered by dcserve otherwise.
"""
from __future__ import annotations

import http.client
import json
import pathlib

import pytest

from dcserve_server import DCServe
from upstream_support import ExampleAPI, OneShotUpstream


def config(tmp: pathlib.Path, upstream: str, rules: bool) -> str:
    """Every path proxied to `upstream`; with `rules`, /api/* is in a dictionary rule's scope."""
    c = {
        "server": {"host": "127.0.0.1", "port": 0},
        "store": {"path": str(tmp / "store")},
        "site": {"root": str(tmp)},
        "compression": {"precompress": False},
        "upstreams": {"names": ["api"], "api": {"servers": [upstream], "readTimeoutSeconds": 5}},
        "routes": {"names": ["api"], "api": {"prefix": "/", "upstream": "api"}},
    }
    if rules:
        c["dictionaries"] = {"rules": ["items"], "items": {"match": "/api/*", "resources": "/api/items",
                                                           "compress": ["/api/*"], "maxAge": 3600}}
    path = tmp / f"proxy-{'rules' if rules else 'plain'}.json"
    path.write_text(json.dumps(c))
    return str(path)


def request(port: int, method: str, path: str, headers: dict) -> tuple[int, http.client.HTTPMessage, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, headers=headers)
        r = conn.getresponse()
        return r.status, r.headers, r.read()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def api():
    with ExampleAPI() as a:
        yield a


@pytest.fixture(scope="module", params=[False, True], ids=["no-rules", "rules"])
def proxy(request, dcserve_bin, api, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("proxy-head")
    with DCServe(dcserve_bin, ["--config", config(tmp, api.base, request.param)]) as server:
        server.has_rules = request.param
        yield server


def upstream_saw(body: bytes) -> dict[str, str]:
    """The request headers the example API's /api/echo received (lower-case names)."""
    return {k.lower(): v for k, v in json.loads(body)["headers"]}


@pytest.mark.parametrize("path", ["/api/items", "/api/echo", "/api/me"])
def test_head_announces_the_length_of_the_get(proxy, path):
    headers = {"Accept-Encoding": "identity", "Authorization": "Bearer alice"}
    status, get_headers, body = request(proxy.port, "GET", path, headers)
    assert status == 200 and len(body) > 0
    status, head_headers, head_body = request(proxy.port, "HEAD", path, headers)
    assert status == 200 and head_body == b""
    if path == "/api/echo":  # the echo shows the method, so GET and HEAD bodies differ: ask the upstream
        assert int(head_headers["Content-Length"]) > 0
    else:
        assert int(head_headers["Content-Length"]) == len(body) == int(get_headers["Content-Length"])
    # The connection answered HEAD without a body: the next request on the proxy is served.
    assert request(proxy.port, "GET", "/api/items", {})[0] == 200


def test_conditionals_reach_the_upstream_only_when_dcserve_cannot_change_the_response(proxy):
    conditions = {"If-None-Match": '"abc"', "If-Modified-Since": "Sun, 06 Nov 1994 08:49:37 GMT"}
    status, _, body = request(proxy.port, "GET", "/api/echo", {"Accept-Encoding": "identity", **conditions})
    assert status == 200
    seen = upstream_saw(body)
    if proxy.has_rules:
        # /api/* is in a rule's scope: the validators may name a variant only dcserve knows.
        assert "if-none-match" not in seen and "if-modified-since" not in seen
    else:
        assert seen.get("if-none-match") == '"abc"'
        assert seen.get("if-modified-since") == conditions["If-Modified-Since"]
    # A client that accepts gzip may get a variant (its own ETag): dcserve evaluates the fields itself.
    status, _, body = request(proxy.port, "GET", "/api/echo", {"Accept-Encoding": "gzip", **conditions})
    assert status == 200
    if not body.startswith(b"{"):
        import gzip
        body = gzip.decompress(body)
    seen = upstream_saw(body)
    assert "if-none-match" not in seen and "if-modified-since" not in seen


def test_a_matching_etag_still_gets_304(proxy):
    status, headers, body = request(proxy.port, "GET", "/api/me", {"Accept-Encoding": "identity",
                                                                  "Authorization": "Bearer bob"})
    assert status == 200
    etag = headers["ETag"]
    status, headers, body = request(proxy.port, "GET", "/api/me", {"Accept-Encoding": "identity",
                                                                  "Authorization": "Bearer bob",
                                                                  "If-None-Match": etag})
    assert status == 304 and body == b"" and headers["ETag"] == etag


@pytest.mark.parametrize("accept", ["identity", "gzip, br"])
def test_a_head_with_a_matching_etag_gets_304(proxy, accept):
    """A proxied HEAD on a path no rule covers passes the upstream's head as it is; on a rule's path it
    is answered from its GET (the same variant and ETag). When dcserve kept the client's conditionals
    from the upstream (a rule covers the path, or the client accepts codings), it evaluates them itself."""
    # The ETag the GET with the same Accept-Encoding gets (a variant's on a rule's path).
    status, headers, _ = request(proxy.port, "GET", "/api/items/2", {"Accept-Encoding": accept if proxy.has_rules else "identity"})
    assert status == 200
    etag = headers["ETag"]
    status, headers, body = request(proxy.port, "HEAD", "/api/items/2", {"Accept-Encoding": accept, "If-None-Match": etag})
    assert status == 304 and body == b"" and headers["ETag"] == etag, dict(headers)
    status, headers, _ = request(proxy.port, "HEAD", "/api/items/2", {"Accept-Encoding": accept, "If-None-Match": '"other"'})
    assert status == 200 and headers["ETag"] == etag


@pytest.mark.parametrize("reply", [
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n",
], ids=["chunked", "no-length"])
def test_head_without_an_upstream_length_announces_none(dcserve_bin, tmp_path, reply):
    """The upstream's answer to HEAD has no Content-Length: the length a GET would have is unknown,
    so the proxied answer has none either (0 would be false, RFC 9110 §9.3.2), nor any framing field,
    and the client connection stays open."""
    with OneShotUpstream({b"/h": reply}) as upstream, \
            DCServe(dcserve_bin, ["--config", config(tmp_path, upstream.base, rules=False)]) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        try:
            conn.request("HEAD", "/h", headers={"Accept-Encoding": "identity"})
            r = conn.getresponse()
            assert r.status == 200 and r.read() == b""
            assert r.getheader("Content-Length") is None, r.getheaders()
            assert r.getheader("Transfer-Encoding") is None, r.getheaders()
            assert r.getheader("Content-Type") == "text/plain"
            conn.request("GET", "/next")
            r = conn.getresponse()
            assert r.status == 200 and r.read().startswith(b"GET /next ")
        finally:
            conn.close()
        assert [h.split(b" ")[:2] for h in upstream.heads] == [[b"HEAD", b"/h"], [b"GET", b"/next"]]
