"""Connection hardening against the release binary, with raw sockets: a server that ends a
connection with unread input must still deliver every response it answered (lingering close,
RFC 9112 §9.6), and a client that half-closes after its request must see the server close at once,
not after the idle timeout."""
import socket

import pytest

from http_support import start_server

SMALL = b"x" * 100


@pytest.fixture(scope="module")
def server(dcserve_bin, tmp_path_factory):
    root = tmp_path_factory.mktemp("hardening-root")
    (root / "a.txt").write_bytes(SMALL)
    s = start_server(dcserve_bin, root, root, "--max-body-bytes", "1024", "--idle-timeout", "60")
    yield s
    assert s.stop() == 0, s.log()


def exchange(server, payload: bytes, timeout: float = 20.0) -> bytes:
    """Sends all of `payload`, half-closes, then reads everything until the server closes (as a
    simple client does: it reads only after sending). Returns what it could read. A failed send
    (the server reset the connection) is tolerated: what matters is what the client can read."""
    sock = server.connect(timeout=timeout)
    received = bytearray()
    try:
        sock.sendall(payload)
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    try:
        while True:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            received += chunk
    except ConnectionResetError:
        pass  # a reset destroys what was not read yet: the assertions count what arrived
    finally:
        sock.close()
    return bytes(received)


def send_with_fin(sock: socket.socket, data: bytes):
    """Sends `data` and the FIN in one segment (corked until the shutdown), so the server sees the
    request and the end of stream in the same readiness edge."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
    sock.sendall(data)
    sock.shutdown(socket.SHUT_WR)


def pipelined_gets(n: int) -> bytes:
    return b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n" * n


def test_all_pipelined_responses_then_413_for_a_large_body(server):
    body = b"z" * (10 * 1000 * 1000)
    payload = pipelined_gets(500) + b"POST /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    got = exchange(server, payload)
    assert got.count(b"HTTP/1.1 200 OK\r\n") == 500
    assert b"HTTP/1.1 413 " in got
    assert got.index(b"HTTP/1.1 413 ") > got.rindex(b"HTTP/1.1 200 OK\r\n")
    assert server.alive()


def test_all_pipelined_responses_then_431_for_a_huge_head(server):
    payload = pipelined_gets(500) + b"GET /a.txt HTTP/1.1\r\nHost: t\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n"
    got = exchange(server, payload)
    assert got.count(b"HTTP/1.1 200 OK\r\n") == 500
    assert b"HTTP/1.1 431 " in got


def test_a_single_200k_header_gets_a_readable_431(server):
    payload = b"GET /a.txt HTTP/1.1\r\nHost: t\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n"
    for _ in range(10):
        got = exchange(server, payload)
        assert got.startswith(b"HTTP/1.1 431 "), got[:80]


def test_request_with_fin_gets_its_response_and_the_server_closes(server):
    # The idle timeout is 60 s; the socket timeout of 5 s fails the test if the server lingers in
    # CLOSE_WAIT instead of closing once the response is written.
    for _ in range(20):
        sock = server.connect(timeout=5)
        send_with_fin(sock, b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n")
        received = bytearray()
        while True:
            chunk = sock.recv(65536)  # socket.timeout here = the server did not close
            if not chunk:
                break
            received += chunk
        sock.close()
        assert received.startswith(b"HTTP/1.1 200 OK\r\n") and received.endswith(SMALL)


def test_pipelined_requests_with_fin_are_all_answered_then_closed(server):
    sock = server.connect(timeout=5)
    send_with_fin(sock, pipelined_gets(3) + b"GET /a.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n" + pipelined_gets(2))
    received = bytearray()
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
    sock.close()
    # Four answers (the fourth says close); the two requests after it are not served.
    assert received.count(b"HTTP/1.1 200 OK\r\n") == 4
    assert received.count(b"Connection: close\r\n") == 1
