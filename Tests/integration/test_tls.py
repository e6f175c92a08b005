"""dcserve over TLS, checked with independent clients: curl --cacert, Python's ssl, openssl s_client.

Certificates are made at test time with the openssl CLI (a throw-away CA and leaves for
localhost/127.0.0.1). Covers protocol (TLS 1.3 preferred, 1.2 allowed, 1.1 refused), ALPN
http/1.1, the certificate chain, SNI, session resumption, stalled and garbage handshakes next to a
good client, SIGHUP certificate reload (new connections see the new certificate, an open keep-alive
connection keeps working), X-Forwarded-Proto / Forwarded trusted only from configured proxies, and
the HTTP→HTTPS redirect.
"""
from __future__ import annotations

import json
import os
import pathlib
import signal
import socket
import ssl
import subprocess
import threading
import time

import pytest

from dcserve_server import DCServe
from tls_support import (CA, client_context, client_hello, http_get, make_ca, make_leaf, tls_connect)

INDEX = b"<!doctype html><title>tls</title><p>dcserve over TLS</p>\n"


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    ca = make_ca(d)
    return {
        "dir": d,
        "ca": ca,
        "leaf": make_leaf(ca, d, "leaf"),
        "other": make_leaf(ca, d, "other", common_name="other.test", sans=("DNS:other.test",)),
        "renewed": make_leaf(ca, d, "renewed"),
    }


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_bytes(INDEX)
    (root / "big.txt").write_bytes(b"".join(b"line %06d of a file larger than one TLS record\n" % i for i in range(20000)))
    return tmp_path


def config_file(site: pathlib.Path, tls: dict, server: dict | None = None) -> str:
    config = {"site": {"root": str(site / "site")}, "store": {"path": str(site / "store")},
              "server": {"accessLog": False, **(server or {})}, "tls": {"port": 0, **tls}}
    path = site / "dcserve.json"
    path.write_text(json.dumps(config))
    return str(path)


def quick(dcserve_bin, site, pki, *extra) -> DCServe:
    return DCServe(dcserve_bin, ["--root", str(site / "site"), "--store", str(site / "store"), "--no-access-log",
                                 "--tls-port", "0", "--tls-cert", str(pki["leaf"].cert), "--tls-key", str(pki["leaf"].key),
                                 *extra], tls=True)


def s_client(port: int, *args: str, input: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", *args], input=input,
                          capture_output=True, timeout=30)


def test_curl_with_cacert(dcserve_bin, site, pki):
    with quick(dcserve_bin, site, pki) as server:
        out = subprocess.run(["curl", "-sS", "--fail", "--cacert", str(pki["ca"].cert), "-w", "\n%{http_version} %{ssl_verify_result}",
                              f"https://localhost:{server.tls_port}/index.html"], capture_output=True, timeout=30)
        assert out.returncode == 0, out.stderr
        body, _, meta = out.stdout.rpartition(b"\n")
        assert body == INDEX
        assert meta == b"1.1 0"  # ALPN picked HTTP/1.1 although curl offers h2; certificate verified
        # A large file (many TLS records, no sendfile under TLS) arrives intact.
        big = subprocess.run(["curl", "-sS", "--fail", "--cacert", str(pki["ca"].cert),
                              f"https://127.0.0.1:{server.tls_port}/big.txt"], capture_output=True, timeout=60)
        assert big.stdout == (site / "site/big.txt").read_bytes()
        # The plain listener still serves HTTP side by side.
        status, _, plain = server.get("/index.html")
        assert (status, plain) == (200, INDEX)


def test_python_ssl_protocol_alpn_certificate_and_resumption(dcserve_bin, site, pki):
    ctx = client_context(pki["ca"])
    with quick(dcserve_bin, site, pki) as server:
        with tls_connect(ctx, server.tls_port) as s:
            assert s.version() == "TLSv1.3"
            assert s.selected_alpn_protocol() == "http/1.1"
            assert s.getpeercert(binary_form=True) == pki["leaf"].der()
            assert dict(x[0] for x in s.getpeercert()["subject"])["commonName"] == "localhost"
            status, headers, body = http_get(s, "/index.html")
            assert (status, body) == (200, INDEX)
            # keep-alive: a second request on the same TLS connection
            assert http_get(s, "/index.html", close=True)[0] == 200
            session = s.session
        assert session is not None
        with tls_connect(ctx, server.tls_port, session=session) as s:
            assert s.session_reused, "session ticket not accepted (no resumption)"
            assert http_get(s, "/index.html", close=True)[2] == INDEX
        # TLS 1.2 works too, with a forward-secret AEAD suite
        ctx12 = client_context(pki["ca"])
        ctx12.maximum_version = ssl.TLSVersion.TLSv1_2
        with tls_connect(ctx12, server.tls_port) as s:
            assert s.version() == "TLSv1.2"
            name, _, _ = s.cipher()
            assert name.startswith("ECDHE-") and ("GCM" in name or "CHACHA20" in name), name
            assert http_get(s, "/index.html", close=True)[2] == INDEX


def test_openssl_s_client_sees_tls13_alpn_and_chain(dcserve_bin, site, pki):
    with quick(dcserve_bin, site, pki) as server:
        out = s_client(server.tls_port, "-servername", "localhost", "-alpn", "h2,http/1.1", "-CAfile", str(pki["ca"].cert),
                       "-verify_return_error", "-verify_hostname", "localhost", "-ign_eof",
                       input=b"GET /index.html HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        text = out.stdout.decode(errors="replace")
        assert out.returncode == 0, text + out.stderr.decode(errors="replace")
        assert "Protocol  : TLSv1.3" in text or "New, TLSv1.3" in text
        assert "ALPN protocol: http/1.1" in text
        assert "Verify return code: 0 (ok)" in text
        assert "subject=CN = localhost" in text and "issuer=CN = dcserve test CA" in text
        assert "HTTP/1.1 200 OK" in text and INDEX.decode() in text


def test_old_protocols_are_refused(dcserve_bin, site, pki):
    with quick(dcserve_bin, site, pki) as server:
        for flag in ("-tls1_1", "-tls1"):
            out = s_client(server.tls_port, flag, "-cipher", "DEFAULT:@SECLEVEL=0")
            err = out.stderr.decode(errors="replace")
            assert out.returncode != 0
            assert "alert protocol version" in err, err  # the server's protocol_version alert (70)
        # and the server is fine afterwards
        with tls_connect(client_context(pki["ca"]), server.tls_port) as s:
            assert http_get(s, "/index.html", close=True)[0] == 200


def test_sni_picks_the_named_certificate(dcserve_bin, site, pki):
    path = config_file(site, {"certificate": str(pki["leaf"].cert), "key": str(pki["leaf"].key),
                              "sni": {"names": ["other"], "other": {"serverName": "Other.Test",
                                                                     "certificate": str(pki["other"].cert),
                                                                     "key": str(pki["other"].key)}}})
    with DCServe(dcserve_bin, ["--config", path], tls=True) as server:
        ctx = client_context(pki["ca"])
        with tls_connect(ctx, server.tls_port, server_name="other.test") as s:
            assert s.getpeercert(binary_form=True) == pki["other"].der()
            assert s.selected_alpn_protocol() == "http/1.1"
            assert http_get(s, "/index.html", host="other.test", close=True)[2] == INDEX
        with tls_connect(ctx, server.tls_port, server_name="localhost") as s:
            assert s.getpeercert(binary_form=True) == pki["leaf"].der()


def recv_until_closed(sock: socket.socket) -> bytes:
    data = b""
    while True:
        try:
            chunk = sock.recv(4096)
        except (ConnectionResetError, ssl.SSLError):
            return data
        if not chunk:
            return data
        data += chunk


def test_stalled_and_garbage_handshakes_do_not_disturb_a_good_client(dcserve_bin, site, pki):
    path = config_file(site, {"certificate": str(pki["leaf"].cert), "key": str(pki["leaf"].key),
                              "handshakeTimeoutSeconds": 1})
    with DCServe(dcserve_bin, ["--config", path], tls=True) as server:
        hello = client_hello()
        # Stalled mid-handshake: half a ClientHello, then nothing.
        stalled = [socket.create_connection(("127.0.0.1", server.tls_port), timeout=30) for _ in range(5)]
        for s in stalled:
            s.sendall(hello[: len(hello) // 2])
        # Silent: connects and sends nothing at all.
        silent = socket.create_connection(("127.0.0.1", server.tls_port), timeout=30)
        # Garbage: plain HTTP and random bytes on the TLS port.
        garbage = []
        for payload in (b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", os.urandom(600), b"\x16\x03\x01\x00\x05hello" * 20):
            g = socket.create_connection(("127.0.0.1", server.tls_port), timeout=30)
            g.sendall(payload)
            garbage.append(g)

        # A good client, on one keep-alive connection and on fresh connections, meanwhile.
        ctx = client_context(pki["ca"])
        with tls_connect(ctx, server.tls_port) as good:
            for _ in range(20):
                status, _, body = http_get(good, "/index.html")
                assert (status, body) == (200, INDEX)
        for _ in range(10):
            with tls_connect(ctx, server.tls_port) as fresh:
                assert http_get(fresh, "/index.html", close=True)[2] == INDEX

        # Garbage gets at most a TLS alert (never an HTTP response) and is closed.
        for g in garbage:
            data = recv_until_closed(g)
            assert b"HTTP/" not in data
            assert data == b"" or data[0] == 0x15, data[:20]  # 0x15 = TLS alert record
            g.close()
        # Stalled handshakes are closed by the handshake timeout (the recv returns instead of hanging).
        for s in stalled + [silent]:
            assert recv_until_closed(s) == b""
            s.close()
        with tls_connect(ctx, server.tls_port) as good:
            assert http_get(good, "/index.html", close=True)[2] == INDEX
        assert server.proc.poll() is None


def test_sighup_reloads_certificates_without_dropping_connections(dcserve_bin, site, pki, tmp_path):
    cert, key = tmp_path / "live.pem", tmp_path / "live.key"
    cert.write_bytes(pki["leaf"].cert.read_bytes())
    key.write_bytes(pki["leaf"].key.read_bytes())
    path = config_file(site, {"certificate": str(cert), "key": str(key)})
    with DCServe(dcserve_bin, ["--config", path], tls=True) as server:
        ctx = client_context(pki["ca"])
        old = tls_connect(ctx, server.tls_port)
        assert old.getpeercert(binary_form=True) == pki["leaf"].der()
        assert http_get(old, "/index.html")[0] == 200

        # Replace the files atomically (as certbot/cert-manager do), then SIGHUP.
        for src, dst in ((pki["renewed"].cert, cert), (pki["renewed"].key, key)):
            tmp = dst.with_suffix(".tmp")
            tmp.write_bytes(src.read_bytes())
            os.replace(tmp, dst)
        server.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 20
        while "reloaded TLS certificates" not in server.logs():
            assert time.monotonic() < deadline, server.logs()
            time.sleep(0.05)

        with tls_connect(ctx, server.tls_port) as new:
            assert new.getpeercert(binary_form=True) == pki["renewed"].der()
            assert http_get(new, "/index.html", close=True)[2] == INDEX
        # The old keep-alive connection keeps working, with its original certificate.
        status, _, body = http_get(old, "/index.html")
        assert (status, body) == (200, INDEX)
        assert old.getpeercert(binary_form=True) == pki["leaf"].der()
        old.close()

        # A broken replacement is refused and the current certificate stays in use.
        key.write_bytes(pki["other"].key.read_bytes())  # key no longer matches the certificate
        server.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 20
        while "TLS certificate reload failed" not in server.logs():
            assert time.monotonic() < deadline, server.logs()
            time.sleep(0.05)
        with tls_connect(ctx, server.tls_port) as s:
            assert s.getpeercert(binary_form=True) == pki["renewed"].der()
            assert http_get(s, "/index.html", close=True)[0] == 200
        assert server.proc.poll() is None


def plain_request(port: int, path: str, headers: dict[str, str], source: str = "127.0.0.1",
                  method: str = "GET") -> tuple[int, dict[str, str]]:
    s = socket.create_connection(("127.0.0.1", port), timeout=20, source_address=(source, 0))
    with s:
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        body = "Content-Length: 0\r\n" if method == "POST" else ""
        s.sendall(f"{method} {path} HTTP/1.1\r\nHost: localhost:{port}\r\n{extra}{body}Connection: close\r\n\r\n".encode())
        data = recv_until_closed(s)
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    return int(head[0].split()[1]), {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in head[1:])}


def test_redirect_to_https(dcserve_bin, site, pki):
    path = config_file(site, {"certificate": str(pki["leaf"].cert), "key": str(pki["leaf"].key)},
                       server={"redirectToHTTPS": True})
    with DCServe(dcserve_bin, ["--config", path], tls=True) as server:
        status, headers = plain_request(server.port, "/index.html?x=1", {})
        assert status == 301
        assert headers["location"] == f"https://localhost:{server.tls_port}/index.html?x=1"
        status, headers = plain_request(server.port, "/form", {}, method="POST")
        assert status == 308 and headers["location"] == f"https://localhost:{server.tls_port}/form"
        # curl follows the redirect onto TLS and gets the page.
        out = subprocess.run(["curl", "-sS", "--fail", "-L", "--cacert", str(pki["ca"].cert),
                              f"http://localhost:{server.port}/index.html"], capture_output=True, timeout=30)
        assert out.stdout == INDEX, out.stderr
        # Requests on the TLS listener are served, not redirected.
        with tls_connect(client_context(pki["ca"]), server.tls_port) as s:
            assert http_get(s, "/index.html", close=True)[0] == 200


def test_forwarded_proto_trusted_only_from_configured_proxies(dcserve_bin, site, pki):
    # 127.0.0.2 plays the TLS terminator; clients from 127.0.0.1 are "elsewhere".
    path = config_file(site, {"certificate": str(pki["leaf"].cert), "key": str(pki["leaf"].key)},
                       server={"redirectToHTTPS": True, "trustedProxies": ["127.0.0.2"]})
    with DCServe(dcserve_bin, ["--config", path], tls=True) as server:
        proxy = "127.0.0.2"
        # From the trusted proxy: https says the request is already secure → served, no redirect.
        assert plain_request(server.port, "/index.html", {"X-Forwarded-Proto": "https"}, source=proxy)[0] == 200
        assert plain_request(server.port, "/index.html", {"Forwarded": 'for=192.0.2.7;proto="https"'}, source=proxy)[0] == 200
        assert plain_request(server.port, "/index.html", {"Forwarded": "for=192.0.2.7;proto=https, for=10.0.0.1;proto=https"},
                             source=proxy)[0] == 200
        # The proxy saying http (or nothing) → redirected.
        assert plain_request(server.port, "/index.html", {"X-Forwarded-Proto": "http"}, source=proxy)[0] == 301
        assert plain_request(server.port, "/index.html", {}, source=proxy)[0] == 301
        # Anyone else claiming https is ignored → redirected.
        assert plain_request(server.port, "/index.html", {"X-Forwarded-Proto": "https"})[0] == 301
        assert plain_request(server.port, "/index.html", {"Forwarded": "proto=https"})[0] == 301


def test_bad_tls_configuration_is_a_clear_error(dcserve_bin, site, pki):
    from conftest import run
    out = run(dcserve_bin, "serve", "--root", str(site / "site"), "--store", str(site / "store"), "--port", "0",
              "--tls-port", "0", "--tls-cert", str(pki["leaf"].cert), "--tls-key", str(pki["other"].key), check=False)
    assert out.returncode != 0
    assert b"cannot start the HTTPS listener: cannot use private key" in out.stderr, out.stderr
    assert b"key values mismatch" in out.stderr
    out = run(dcserve_bin, "serve", "--root", str(site / "site"), "--port", "0", "--tls-cert", str(pki["leaf"].cert), check=False)
    assert out.returncode != 0 and b"tls.key" in out.stderr, out.stderr
