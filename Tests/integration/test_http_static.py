"""Static files through the real binary: traversal, index, MIME, validators, ranges, errors, HEAD."""
import http.client
import os
import socket

import pytest

from conftest import run
from http_support import get_ok, make_docroot, read_response, start_server


@pytest.fixture(scope="module")
def site(dcserve_bin, tmp_path_factory):
    root = tmp_path_factory.mktemp("static") / "root"
    root.mkdir()
    files = make_docroot(root)
    s = start_server(dcserve_bin, root, tmp_path_factory.mktemp("logs"))
    s.root = root
    yield s, files
    assert s.stop() == 0


def raw_get(server, target: bytes, method=b"GET", extra=b""):
    with server.connect() as s:
        s.sendall(method + b" " + target + b" HTTP/1.1\r\nHost: t\r\nConnection: close\r\n" + extra + b"\r\n")
        return read_response(s, bytearray(), head_only=(method == b"HEAD"))


@pytest.mark.parametrize("target", [
    b"/../outside-secret.txt", b"/sub/../../outside-secret.txt", b"/%2e%2e/outside-secret.txt",
    b"/%2E%2E/%2e%2e/etc/passwd", b"/sub/%2e%2e/%2e%2e/outside-secret.txt", b"/..%2foutside-secret.txt",
])
def test_traversal_is_rejected(site, target):
    status, _, body = raw_get(site[0], target)
    assert status == 400
    assert b"secret" not in body


def test_nul_and_bad_escapes(site):
    assert raw_get(site[0], b"/a.txt%00.html")[0] == 400
    assert raw_get(site[0], b"/a%2")[0] == 400
    assert raw_get(site[0], b"/a%zz")[0] == 400


def test_symlinks(site):
    s, files = site
    assert raw_get(s, b"/outside-link")[0] == 404
    assert raw_get(s, b"/outside-dir/outside-secret.txt")[0] == 404
    status, _, body = raw_get(s, b"/inside-link")
    assert status == 200 and body == files["a.txt"]


def test_index_and_directory_redirect(site):
    s, files = site
    status, headers, body = raw_get(s, b"/")
    assert status == 200 and body == files["index.html"]
    assert headers["content-type"] == ["text/html; charset=utf-8"]
    status, _, body = raw_get(s, b"/sub/")
    assert status == 200 and body == files["sub/index.html"]
    status, headers, _ = raw_get(s, b"/sub?x=1")
    assert status == 301 and headers["location"] == ["/sub/?x=1"]
    assert raw_get(s, b"/sub/deep/")[0] == 404  # no index, no listing


@pytest.mark.parametrize("name,mime", [
    ("a.txt", "text/plain; charset=utf-8"), ("style.css", "text/css; charset=utf-8"),
    ("data.json", "application/json"), ("1k.bin", "application/octet-stream"),
])
def test_mime_types(site, name, mime):
    status, headers, body = raw_get(site[0], b"/" + name.encode())
    assert status == 200 and headers["content-type"] == [mime] and body == site[1][name]


def test_etag_last_modified_and_304(site):
    s, files = site
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
    conn.request("GET", "/a.txt")
    r = conn.getresponse()
    r.read()
    etag, last_modified = r.getheader("ETag"), r.getheader("Last-Modified")
    assert etag.startswith('"') and etag.endswith('"') and not etag.startswith("W/")
    conn.request("GET", "/a.txt", headers={"If-None-Match": etag})
    r = conn.getresponse()
    assert r.status == 304 and r.read() == b"" and r.getheader("ETag") == etag
    conn.request("GET", "/a.txt", headers={"If-None-Match": '"other", ' + etag})
    r = conn.getresponse()
    assert r.status == 304 and r.read() == b""
    conn.request("GET", "/a.txt", headers={"If-None-Match": '"other"'})
    r = conn.getresponse()
    assert r.status == 200 and r.read() == files["a.txt"]
    conn.request("GET", "/a.txt", headers={"If-Modified-Since": last_modified})
    r = conn.getresponse()
    assert r.status == 304
    r.read()
    conn.request("GET", "/a.txt", headers={"If-Modified-Since": "Sun, 06 Nov 1994 08:49:37 GMT"})
    r = conn.getresponse()
    assert r.status == 200 and r.read() == files["a.txt"]
    # The same content gives the same strong ETag; other content a different one.
    conn.request("GET", "/b.txt")
    r = conn.getresponse()
    r.read()
    assert r.getheader("ETag") != etag
    conn.close()
    # curl's conditional request agrees.
    out = run("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", f"If-None-Match: {etag}", f"{s.base}/a.txt")
    assert out.stdout == b"304"


def test_ranges(site):
    s, files = site
    data = files["1k.bin"]
    status, headers, body = raw_get(s, b"/1k.bin", extra=b"Range: bytes=10-19\r\n")
    assert status == 206 and body == data[10:20] and headers["content-range"] == ["bytes 10-19/1024"]
    status, _, body = raw_get(s, b"/1k.bin", extra=b"Range: bytes=-100\r\n")
    assert status == 206 and body == data[-100:]
    status, headers, _ = raw_get(s, b"/1k.bin", extra=b"Range: bytes=5000-\r\n")
    assert status == 416 and headers["content-range"] == ["bytes */1024"]
    status, _, body = raw_get(s, b"/1k.bin", extra=b"Range: bytes=0-1,5-6\r\n")  # multiple: full body
    assert status == 200 and body == data
    status, _, body = raw_get(s, b"/1k.bin", extra=b'Range: bytes=0-1\r\nIf-Range: "stale"\r\n')
    assert status == 200 and body == data
    # Large range of the big file through sendfile, checked against the file.
    r = run("curl", "-s", "-r", "1000000-3000000", f"{s.base}/big.bin")
    with open(s.root / "big.bin", "rb") as f:
        f.seek(1000000)
        assert r.stdout == f.read(2000001)


def test_not_found_method_not_allowed_head(site):
    s, files = site
    assert raw_get(s, b"/missing.txt")[0] == 404
    assert raw_get(s, b"/sub/deep/c.txt/x")[0] == 404
    status, headers, _ = raw_get(s, b"/a.txt", method=b"DELETE")
    assert status == 405 and headers["allow"] == ["GET, HEAD"]
    status, headers, _ = raw_get(s, b"/a.txt", method=b"POST", extra=b"Content-Length: 0\r\n")
    assert status == 405 and headers["allow"] == ["GET, HEAD"]
    status, headers, body = raw_get(s, b"/b.txt", method=b"HEAD")
    assert status == 200 and body == b"" and headers["content-length"] == [str(len(files["b.txt"]))]
    r = run("curl", "-sI", f"{s.base}/big.bin")
    assert b"Content-Length: 67108864" in r.stdout
    get_ok(s)


def test_repeat_requests_follow_file_changes(site, tmp_path):
    """A file served before (its descriptor is cached) is re-checked on every request: replaced by
    rename, rewritten in place, turned into a symlink leaving the root, deleted, or restored."""
    s, _ = site
    path = s.root / "changing.txt"
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"outside the root\n")
    path.write_bytes(b"version 1\n")
    for _ in range(3):
        status, headers, body = raw_get(s, b"/changing.txt")
        assert status == 200 and body == b"version 1\n"
    etag1 = headers["etag"]

    replacement = s.root / ".changing.tmp"
    replacement.write_bytes(b"version 2, longer\n")
    replacement.rename(path)  # a new inode under the same name
    status, headers, body = raw_get(s, b"/changing.txt")
    assert status == 200 and body == b"version 2, longer\n" and headers["etag"] != etag1

    with open(path, "r+b") as f:  # same inode, new size
        f.write(b"version 3 written in place, longer still\n")
    status, _, body = raw_get(s, b"/changing.txt")
    assert status == 200 and body == b"version 3 written in place, longer still\n"

    path.unlink()
    path.symlink_to(outside)
    status, _, body = raw_get(s, b"/changing.txt")
    assert status == 404 and b"outside" not in body

    path.unlink()
    assert raw_get(s, b"/changing.txt")[0] == 404

    path.write_bytes(b"version 4\n")
    status, _, body = raw_get(s, b"/changing.txt")
    assert status == 200 and body == b"version 4\n"


def test_a_file_too_large_to_compress_still_answers_if_none_match_with_304(dcserve_bin, tmp_path):
    """A file over the compression limit (64 MiB) passes untouched; the client's If-None-Match, held
    back from the file handler because the client accepts codings, is evaluated on it: 304, not the file."""
    from dcserve_server import DCServe
    (tmp_path / "site").mkdir()
    (tmp_path / "site/huge.bin").write_bytes(b"")
    os.truncate(tmp_path / "site/huge.bin", 70 << 20)
    with DCServe(dcserve_bin, ["--root", str(tmp_path / "site"), "--store", str(tmp_path / "store")]) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        conn.request("HEAD", "/huge.bin")
        head = conn.getresponse()
        head.read()
        etag = head.headers["ETag"]
        assert etag
        for accept in ["gzip, br", "identity"]:
            conn.request("GET", "/huge.bin", headers={"If-None-Match": etag, "Accept-Encoding": accept})
            r = conn.getresponse()
            assert r.status == 304 and r.read() == b"" and r.headers["ETag"] == etag, (accept, dict(r.headers))
        conn.close()


@pytest.mark.parametrize("target", [b"/static/../other/app.js", b"/static/%2e%2e/other/app.js",
                                    b"/static/x%2F..%2F..%2Fother/app.js"])
def test_a_rule_never_covers_a_file_reached_through_dot_segments(dcserve_bin, tmp_path, target):
    """`--dictionaries '/static/*'`: a path that matches the rule as sent but names /other/app.js once
    resolved is served without dictionaries: no Use-As-Dictionary, nothing stored, no delta."""
    import hashlib
    from dcserve_server import DCServe
    (tmp_path / "site/static").mkdir(parents=True)
    (tmp_path / "site/other").mkdir()
    secret = b"other content, outside the rule's scope " * 20
    (tmp_path / "site/other/app.js").write_bytes(secret)
    (tmp_path / "site/static/app.js").write_bytes(b"in scope " * 100)
    store = tmp_path / "store"
    with DCServe(dcserve_bin, ["--root", str(tmp_path / "site"), "--store", str(store), "--dictionaries", "/static/*"]) as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
            s.sendall(b"GET " + target + b" HTTP/1.1\r\nHost: t\r\nAccept-Encoding: dcb, dcz, gzip\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        head = data.split(b"\r\n\r\n", 1)[0].lower()
        assert head.startswith(b"http/1.1 200"), head
        assert b"use-as-dictionary" not in head and b"content-encoding: dc" not in head, head
        assert not (store / hashlib.sha256(secret).hexdigest()).exists()
        # The file in scope still is a dictionary.
        status, headers, _ = server.get("/static/app.js")
        assert status == 200 and headers["Use-As-Dictionary"] == 'match="/static/*"'
