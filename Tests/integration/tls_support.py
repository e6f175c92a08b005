"""Test certificates made with the `openssl` CLI at test time (never committed), and small TLS helpers.

`make_ca(dir)` creates a self-signed CA; `make_leaf(ca, dir, name, sans)` a leaf certificate signed by
it (EC P-256, serverAuth) with the given subjectAltNames. `spki_pin(cert)` is the base64 SHA-256 of
the certificate's SubjectPublicKeyInfo, the form Chromium's --ignore-certificate-errors-spki-list takes.
"""
from __future__ import annotations

import base64
import hashlib
import os
import pathlib
import socket
import ssl
import subprocess
from dataclasses import dataclass


def _openssl(*args: str, cwd: pathlib.Path) -> bytes:
    return subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, check=True, timeout=60).stdout


@dataclass
class CA:
    cert: pathlib.Path
    key: pathlib.Path


@dataclass
class Leaf:
    cert: pathlib.Path
    key: pathlib.Path

    def der(self) -> bytes:
        return ssl.PEM_cert_to_DER_cert(self.cert.read_text())


def make_ca(directory: pathlib.Path, name: str = "dcserve test CA") -> CA:
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "ca.pem", directory / "ca.key"
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", f"/CN={name}",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
             cwd=directory)
    return CA(cert, key)


def make_leaf(ca: CA, directory: pathlib.Path, stem: str, common_name: str = "localhost",
              sans: tuple[str, ...] = ("DNS:localhost", "IP:127.0.0.1")) -> Leaf:
    directory.mkdir(parents=True, exist_ok=True)
    cert, key, csr, ext = (directory / f"{stem}.pem", directory / f"{stem}.key",
                           directory / f"{stem}.csr", directory / f"{stem}.ext")
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", str(key),
             "-out", str(csr), "-subj", f"/CN={common_name}", cwd=directory)
    ext.write_text(f"subjectAltName={','.join(sans)}\nbasicConstraints=CA:FALSE\n"
                   "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n")
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(ca.cert), "-CAkey", str(ca.key), "-set_serial",
             str(int.from_bytes(os.urandom(8), "big") >> 1),
             "-out", str(cert), "-days", "2", "-extfile", str(ext), cwd=directory)
    return Leaf(cert, key)


def self_signed(directory: pathlib.Path, stem: str = "selfsigned") -> Leaf:
    """A self-signed leaf for localhost (the browser test pins it by SPKI)."""
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / f"{stem}.pem", directory / f"{stem}.key"
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=localhost",
             "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", cwd=directory)
    return Leaf(cert, key)


def spki_pin(cert: pathlib.Path) -> str:
    """base64(SHA-256(SubjectPublicKeyInfo DER)) of a PEM certificate, computed with the openssl CLI."""
    pub = _openssl("x509", "-in", str(cert), "-noout", "-pubkey", cwd=cert.parent)
    der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "DER"], input=pub, capture_output=True,
                         check=True, timeout=60).stdout
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


def client_context(ca: CA) -> ssl.SSLContext:
    """A verifying Python client context trusting `ca`, offering ALPN http/1.1."""
    ctx = ssl.create_default_context(cafile=str(ca.cert))
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


def tls_connect(ctx: ssl.SSLContext, port: int, server_name: str = "localhost", session=None) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", port), timeout=20)
    return ctx.wrap_socket(raw, server_hostname=server_name, session=session)


def http_get(sock: socket.socket, path: str, host: str = "localhost", close: bool = False,
             extra: str = "") -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 GET on an open (TLS or plain) socket; reads exactly one Content-Length response."""
    request = f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}"
    if close:
        request += "Connection: close\r\n"
    sock.sendall((request + "\r\n").encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"connection closed before the response head: {data!r}")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed in the body")
        body += chunk
    return status, headers, body[:length]


def client_hello() -> bytes:
    """The bytes of a real TLS ClientHello (made by Python's ssl through memory BIOs)."""
    ctx = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname="localhost")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()
