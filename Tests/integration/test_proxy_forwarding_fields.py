"""What the upstream hears about the client (RFC 7239; the de facto `X-Real-IP`). A client's own
`Forwarded` and `X-Real-IP` are claims, not hops: with `forwarded` on, `Forwarded` is rewritten from
what dcserve knows (dcserve's element appended only to what a trusted proxy sent, else replacing the
client's), and a client's `X-Real-IP` never passes: it is set to the peer's address (with
`forwardedFor`, the default) or removed. Before, both passed through unchanged.

Release binary; a raw-socket upstream that records every request head."""
from __future__ import annotations

import json
import re

from dcserve_server import DCServe
from test_proxy import proxy_config
from upstream_support import OneShotUpstream

SPOOFED = {"Forwarded": "for=203.0.113.66;proto=https", "X-Real-IP": "203.0.113.66"}


def config(tmp, upstream, trusted: list[str] | None = None, **settings) -> str:
    path = proxy_config(tmp, upstream.base, **settings)
    document = json.loads(open(path).read())
    if trusted is not None:
        document["server"]["trustedProxies"] = trusted
    open(path, "w").write(json.dumps(document))
    return path


def forwarded_head(server, upstream, headers: dict[str, str]) -> bytes:
    """Sends one GET with `headers` through dcserve; returns the head the upstream received."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("GET", "/who", headers={"Host": "site.example", **headers})
        r = conn.getresponse()
        assert r.status == 200, r.read()
        r.read()
    finally:
        conn.close()
    return upstream.heads[-1]


def values(head: bytes, name: str) -> list[bytes]:
    return re.findall(rb"(?im)^" + name.encode() + rb": ([^\r\n]*)", head)


def test_a_clients_forwarded_and_real_ip_are_replaced(dcserve_bin, tmp_path):
    with OneShotUpstream() as upstream, \
            DCServe(dcserve_bin, ["--config", config(tmp_path, upstream, forwarded=True)]) as server:
        head = forwarded_head(server, upstream, SPOOFED)
    assert values(head, "Forwarded") == [b"for=127.0.0.1;proto=http;host=site.example"], head
    assert values(head, "X-Real-IP") == [b"127.0.0.1"], head
    assert b"203.0.113.66" not in head, head


def test_a_trusted_proxys_fields_are_kept_and_appended_to(dcserve_bin, tmp_path):
    with OneShotUpstream() as upstream, \
            DCServe(dcserve_bin, ["--config", config(tmp_path, upstream, trusted=["127.0.0.1"], forwarded=True)]) as server:
        head = forwarded_head(server, upstream, {"Forwarded": "for=192.0.2.7;proto=https", "X-Real-IP": "192.0.2.7"})
    assert values(head, "Forwarded") == [b"for=192.0.2.7;proto=https, for=127.0.0.1;proto=https;host=site.example"], head
    assert values(head, "X-Real-IP") == [b"192.0.2.7"], head


def test_real_ip_follows_forwarded_for(dcserve_bin, tmp_path):
    with OneShotUpstream() as upstream, \
            DCServe(dcserve_bin, ["--config", config(tmp_path, upstream)]) as server:
        head = forwarded_head(server, upstream, SPOOFED)
    assert values(head, "X-Real-IP") == [b"127.0.0.1"], head
    assert values(head, "X-Forwarded-For") == [b"127.0.0.1"], head
    with OneShotUpstream() as upstream, \
            DCServe(dcserve_bin, ["--config", config(tmp_path, upstream, forwardedFor=False)]) as server:
        head = forwarded_head(server, upstream, SPOOFED)
    assert values(head, "X-Real-IP") == [], head
