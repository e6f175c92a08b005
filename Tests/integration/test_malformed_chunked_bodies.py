"""Malformed chunked request bodies (RFC 9112 §7.1) get 400 and an access-log line, also when the body
is streamed to an upstream (proxied routes stream request bodies): before, the connection closed with
no status and no log line. The upstream (the example API's echo endpoint, which reads the whole body
before answering) never answers such a request.

Release binary; raw sockets for the malformed bodies."""
from __future__ import annotations

import re
import socket

import pytest

from dcserve_server import DCServe
from test_proxy import api, proxy_config, request  # noqa: F401  (api: the module-scoped example API)

# The body after a first valid chunk `3\r\nabc\r\n`: nginx answers each with 400.
MALFORMED = {
    "bare-LF size line": b"5\nhello\r\n0\r\n\r\n",
    "0x prefix": b"0x5\r\nhello\r\n0\r\n\r\n",
    "17-digit size": b"fffffffffffffffff\r\nhello\r\n0\r\n\r\n",
    "data without CRLF": b"5\r\nhelloXX0\r\n\r\n",
    "negative size": b"-5\r\nhello\r\n0\r\n\r\n",
}


@pytest.fixture(scope="module")
def proxy(dcserve_bin, api, tmp_path_factory):  # noqa: F811
    tmp = tmp_path_factory.mktemp("chunked")
    with DCServe(dcserve_bin, ["--config", proxy_config(tmp, api.base), "--event-loops", "1"]) as server:
        yield server


def exchange(port: int, raw: bytes) -> bytes:
    """Sends `raw`, returns everything until the server closes (a socket timeout fails the test)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(raw)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data


@pytest.mark.parametrize("name", MALFORMED)
def test_malformed_chunked_body_streamed_to_an_upstream_gets_400_and_a_log_line(proxy, name):
    target = f"/api/echo?case={name.replace(' ', '-')}"
    raw = (f"POST {target} HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
           + b"3\r\nabc\r\n" + MALFORMED[name])
    answer = exchange(proxy.port, raw)
    assert answer.startswith(b"HTTP/1.1 400 "), (name, answer[:300])
    head, body = answer.split(b"\r\n\r\n", 1)
    assert re.search(rb"(?im)^connection: close\r?$", head), head
    assert b"chunk" in body, body  # the parser's reason, not an upstream's answer
    assert answer.count(b"HTTP/1.1 ") == 1, answer  # nothing after the error
    # The proxy still serves the next client.
    assert request(proxy.port, "GET", "/api/items")[0] == 200


def test_each_malformed_body_is_access_logged(dcserve_bin, api, tmp_path):  # noqa: F811
    with DCServe(dcserve_bin, ["--config", proxy_config(tmp_path, api.base)]) as server:
        for name, bad in MALFORMED.items():
            raw = (f"POST /api/echo?log={name.replace(' ', '-')} HTTP/1.1\r\nHost: t\r\n"
                   f"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n").encode() + bad
            assert exchange(server.port, raw).startswith(b"HTTP/1.1 400 ")
    logs = server.logs()  # after the stop: the access log is flushed at shutdown
    for name in MALFORMED:
        assert re.search(rf"POST /api/echo\?log={re.escape(name.replace(' ', '-'))} 400 ", logs), (name, logs[-3000:])
