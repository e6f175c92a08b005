"""Every method through dcserve's reverse proxy, against the example API (examples/api, Starlette on
uvicorn; its `EveryMethod` wrapper echoes any method under /api/any/, answers `OPTIONS *` and
reflects TRACE): extension methods forwarded with their bodies, `OPTIONS *` and absolute-form targets,
`Max-Forwards` on TRACE/OPTIONS (RFC 9110 §7.6.2), TRACE refused by default (405, as nginx).

Requests are written as raw bytes (the exact request line matters here) and answers read with
http.client's response parser.
"""
from __future__ import annotations

import http.client
import json
import pathlib
import socket

import pytest

from dcserve_server import DCServe
from upstream_support import ExampleAPI


def config(tmp: pathlib.Path, upstream: str) -> str:
    """`/` proxied to `api` (TRACE refused), `/traced/` to the same API with `forwardTrace`, `/site/`
    static files."""
    (tmp / "www" / "site").mkdir(parents=True)
    (tmp / "www" / "site" / "a.txt").write_text("static file\n")
    settings = {"servers": [upstream], "readTimeoutSeconds": 5, "connectTimeoutSeconds": 2}
    document = {
        "server": {"host": "127.0.0.1", "port": 0},
        "store": {"path": str(tmp / "store")},
        "site": {"root": str(tmp / "www")},
        "compression": {"precompress": False},
        "upstreams": {"names": ["api", "traced"], "api": settings, "traced": {**settings, "forwardTrace": True}},
        "routes": {"names": ["api", "traced", "site"], "api": {"prefix": "/", "upstream": "api"},
                   "traced": {"prefix": "/traced/", "upstream": "traced"}, "site": {"prefix": "/site/"}},
    }
    path = tmp / "methods.json"
    path.write_text(json.dumps(document))
    return str(path)


@pytest.fixture(scope="module")
def api():
    with ExampleAPI() as a:
        yield a


@pytest.fixture(scope="module")
def proxy(dcserve_bin, api, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("methods")
    with DCServe(dcserve_bin, ["--config", config(tmp, api.base)]) as server:
        yield server


def exchange(port: int, raw: bytes, method: str) -> tuple[int, http.client.HTTPMessage, bytes]:
    """Sends `raw` (one request) and reads one response to `method`."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(raw)
        response = http.client.HTTPResponse(s, method=method)
        response.begin()
        return response.status, response.headers, response.read()


def head(method: str, target: str, *fields: str, body: bytes = b"") -> bytes:
    lines = [f"{method} {target} HTTP/1.1", "Host: app.test", *fields]
    if body:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def upstream_saw(body: bytes) -> dict:
    """The example API's echo, with its header list as a dict of lists (lower-case names)."""
    echo = json.loads(body)
    fields: dict[str, list[str]] = {}
    for name, value in echo["headers"]:
        fields.setdefault(name, []).append(value)
    echo["fields"] = fields
    return echo


@pytest.mark.parametrize("method", ["PROPFIND", "QUERY", "REPORT", "MKCOL", "M-SEARCH", "get", "BREW"])
def test_extension_methods_are_forwarded_with_target_fields_and_body(proxy, method):
    body = b'<?xml version="1.0"?><propfind xmlns="DAV:"><allprop/></propfind>'
    status, headers, answer = exchange(proxy.port, head(method, "/api/any/doc%20s?depth=1&x", "Depth: 1",
                                                        "Max-Forwards: 5", "Content-Type: application/xml",
                                                        body=body), method)
    assert status == 200, answer
    echo = upstream_saw(answer)
    assert echo["method"] == method  # spelled as sent: methods are case-sensitive
    assert echo["target"] == "/api/any/doc%20s?depth=1&x"
    assert echo["body"] == body.decode()
    assert echo["fields"]["depth"] == ["1"]
    assert echo["fields"]["max-forwards"] == ["5"], "Max-Forwards of other methods is not touched"
    assert echo["fields"]["host"] == ["app.test"]


def test_extension_method_with_a_chunked_body(proxy):
    raw = (b"QUERY /api/any/search HTTP/1.1\r\nHost: app.test\r\nContent-Type: application/sql\r\n"
           b"Transfer-Encoding: chunked\r\n\r\n6\r\nSELECT\r\n7\r\n * FROM\r\n3\r\n us\r\n0\r\n\r\n")
    status, _, answer = exchange(proxy.port, raw, "QUERY")
    assert status == 200, answer
    echo = upstream_saw(answer)
    assert echo["method"] == "QUERY" and echo["body"] == "SELECT * FROM us"


def test_extension_method_on_static_files_is_not_allowed(proxy):
    status, headers, _ = exchange(proxy.port, head("PROPFIND", "/site/a.txt"), "PROPFIND")
    assert status == 405
    assert headers["Allow"] == "GET, HEAD"
    status, _, body = exchange(proxy.port, head("GET", "/site/a.txt"), "GET")
    assert status == 200 and body == b"static file\n"


def test_connect_and_non_token_methods_are_refused(proxy):
    status, _, _ = exchange(proxy.port, b"CONNECT app.test:443 HTTP/1.1\r\nHost: app.test:443\r\n\r\n", "CONNECT")
    assert status == 501
    status, _, _ = exchange(proxy.port, head("PROP(FIND", "/api/any/x"), "PROPFIND")
    assert status == 400


def test_server_wide_options_keeps_its_asterisk(proxy):
    status, headers, answer = exchange(proxy.port, head("OPTIONS", "*"), "OPTIONS")
    assert status == 200, answer
    assert upstream_saw(answer)["target"] == "*"
    assert "PROPFIND" in headers["Allow"], "the upstream's Allow comes back"
    # The absolute form with an empty path means the same (RFC 9112 §3.2.4).
    status, _, answer = exchange(proxy.port, head("OPTIONS", "http://app.test"), "OPTIONS")
    assert status == 200, answer
    echo = upstream_saw(answer)
    assert echo["target"] == "*" and echo["fields"]["host"] == ["app.test"]


def test_absolute_form_target_keeps_its_path_query_and_authority(proxy):
    status, _, answer = exchange(proxy.port, head("PROPFIND", "http://other.test/api/any/a%2Fb?q=1"), "PROPFIND")
    assert status == 200, answer
    echo = upstream_saw(answer)
    # Sent to the origin in origin form, byte for byte; the target's authority is the Host (RFC 9112 §3.2.2).
    assert echo["target"] == "/api/any/a%2Fb?q=1"
    assert echo["fields"]["host"] == ["other.test"]


def test_max_forwards_is_decremented_on_options_and_trace(proxy):
    status, _, answer = exchange(proxy.port, head("OPTIONS", "/api/any/x", "Max-Forwards: 3"), "OPTIONS")
    assert status == 200 and upstream_saw(answer)["fields"]["max-forwards"] == ["2"]
    status, _, answer = exchange(proxy.port, head("OPTIONS", "*", "Max-Forwards: 1"), "OPTIONS")
    assert status == 200 and upstream_saw(answer)["fields"]["max-forwards"] == ["0"]
    status, headers, answer = exchange(proxy.port, head("TRACE", "/traced/x?y", "Max-Forwards: 7", "X-Probe: 1"), "TRACE")
    assert status == 200 and headers["Content-Type"] == "message/http"
    reflected = answer.decode().lower()
    assert reflected.startswith("trace /traced/x?y http/1.1\r\n"), reflected
    assert "max-forwards: 6\r\n" in reflected and "x-probe: 1\r\n" in reflected
    assert "via: 1.1 " in reflected, "the upstream saw the forwarded request"


def test_max_forwards_zero_is_answered_by_dcserve(proxy):
    status, headers, answer = exchange(proxy.port, head("OPTIONS", "/api/any/x", "Max-Forwards: 0"), "OPTIONS")
    assert status == 200 and answer == b"", "answered by dcserve, not the upstream's echo"
    assert headers["Allow"] == "GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH"
    status, headers, answer = exchange(proxy.port, head("OPTIONS", "*", "Max-Forwards: 0"), "OPTIONS")
    assert status == 200 and answer == b"" and "PROPFIND" not in headers["Allow"]
    status, headers, _ = exchange(proxy.port, head("OPTIONS", "/traced/x", "Max-Forwards: 0"), "OPTIONS")
    assert headers["Allow"].endswith(", TRACE")
    status, headers, answer = exchange(proxy.port, head("TRACE", "/traced/x", "Max-Forwards: 0", "X-Probe: 2",
                                                        "Cookie: session=secret", "Authorization: Bearer secret"), "TRACE")
    assert status == 200 and headers["Content-Type"] == "message/http"
    text = answer.decode()
    assert text.startswith("TRACE /traced/x HTTP/1.1\r\n") and "X-Probe: 2\r\n" in text
    assert "Via" not in text, "nothing went upstream"
    assert "secret" not in text, "credentials are not reflected"


@pytest.mark.parametrize("value", ["-1", "two", "1.0", ""])
def test_invalid_max_forwards_is_a_400(proxy, value):
    status, _, _ = exchange(proxy.port, head("OPTIONS", "/api/any/x", f"Max-Forwards: {value}"), "OPTIONS")
    assert status == 400


def test_trace_is_refused_by_default(proxy):
    status, headers, body = exchange(proxy.port, head("TRACE", "/api/any/x", "Cookie: session=secret"), "TRACE")
    assert status == 405 and "secret" not in body.decode()
    assert "TRACE" not in headers["Allow"]
    status, _, _ = exchange(proxy.port, head("TRACE", "/api/any/x", "Max-Forwards: 0"), "TRACE")
    assert status == 405
    assert proxy.alive(), proxy.logs()
