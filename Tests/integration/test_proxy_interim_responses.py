"""Interim responses from the upstream (RFC 9110 §15.2): a `103 Early Hints` (and any 1xx other than
100 and 101) reaches an HTTP/1.1 client ahead of the final response, without hop-by-hop fields; an
HTTP/1.0 client gets none (a server must not send it 1xx); the upstream's `100 Continue` stays with
dcserve (it answers the client's expectation itself). Before, every 1xx was dropped.

Release binary; a raw-socket upstream and raw-socket clients (every byte on the wire is checked)."""
from __future__ import annotations

import re
import socket

from dcserve_server import DCServe
from test_proxy import proxy_config
from upstream_support import OneShotUpstream

FINAL = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello"
REPLIES = {
    b"/hints": b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n"
               b"Connection: X-Hop\r\nX-Hop: 1\r\n\r\n" + FINAL,
    b"/continue-then-hints": b"HTTP/1.1 100 Continue\r\n\r\n"
                             b"HTTP/1.1 103 Early Hints\r\nLink: </a.js>; rel=preload; as=script\r\n\r\n"
                             b"HTTP/1.1 103 Early Hints\r\nLink: </b.js>; rel=preload; as=script\r\n\r\n" + FINAL,
}


def raw_exchange(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data


def messages(data: bytes) -> list[bytes]:
    """The status lines on the wire, in order."""
    return re.findall(rb"HTTP/1\.[01] \d{3}[^\r]*", data)


def test_early_hints_reach_an_http11_client_before_the_final_response(dcserve_bin, tmp_path):
    with OneShotUpstream(REPLIES) as upstream, \
            DCServe(dcserve_bin, ["--config", proxy_config(tmp_path, upstream.base)]) as server:
        data = raw_exchange(server.port, b"GET /hints HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        assert messages(data) == [b"HTTP/1.1 103 Early Hints", b"HTTP/1.1 200 OK"], data
        interim, rest = data.split(b"\r\n\r\n", 1)
        assert b"\r\nLink: </style.css>; rel=preload; as=style" in interim, interim
        assert b"X-Hop" not in interim and b"Connection" not in interim, "hop-by-hop fields removed"
        assert b"Content-Length" not in interim and b"Transfer-Encoding" not in interim
        assert rest.startswith(b"HTTP/1.1 200 OK\r\n") and rest.endswith(b"\r\n\r\nhello"), rest

        data = raw_exchange(server.port, b"GET /continue-then-hints HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        assert messages(data) == [b"HTTP/1.1 103 Early Hints", b"HTTP/1.1 103 Early Hints", b"HTTP/1.1 200 OK"], data
        assert data.index(b"</a.js>") < data.index(b"</b.js>") < data.index(b"200 OK")


def test_an_http10_client_gets_no_interim_response(dcserve_bin, tmp_path):
    with OneShotUpstream(REPLIES) as upstream, \
            DCServe(dcserve_bin, ["--config", proxy_config(tmp_path, upstream.base)]) as server:
        data = raw_exchange(server.port, b"GET /hints HTTP/1.0\r\nHost: t\r\n\r\n")
        assert messages(data) == [b"HTTP/1.1 200 OK"], data
        assert data.endswith(b"hello")


def test_hints_keep_the_connection_usable_for_the_next_request(dcserve_bin, tmp_path):
    with OneShotUpstream(REPLIES) as upstream, \
            DCServe(dcserve_bin, ["--config", proxy_config(tmp_path, upstream.base)]) as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
            s.sendall(b"GET /hints HTTP/1.1\r\nHost: t\r\n\r\nGET /other HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        assert [m.split(b" ")[1] for m in messages(data)] == [b"103", b"200", b"200"], data
        assert b"GET /other HTTP/1.1" in data  # the second answer: the upstream's echo of its request
