"""`If-Match` and `If-Unmodified-Since` on static GET/HEAD (RFC 9110 §13.1.1, §13.1.4), evaluated in
§13.2.2's order (a false precondition is a 412 before any 304). Before, both were ignored (200).

A variant's ETag (`W/"<identity>-br"`) names the identity representation's state plus the coding it was
sent with (weak only because its bytes vary with the encode level), so `If-Match` with the identity
ETag or with any variant ETag made from it succeeds whatever the request's `Accept-Encoding` (the
state is compared strongly: any other weak tag, `W/"<identity>"` included, never matches), and fails once
the file changed. Checked through the compression step (a client accepting codings) and without it
(an identity-only client: the file handler answers), for a small file (served from memory) and a
large one (from the open file). Release binary, http.client."""
from __future__ import annotations

import email.utils
import os
import time

import pytest

from dcserve_server import DCServe
from decision_support import request

SMALL = b"".join(b"<p>line %d of a page that compresses well</p>\n" % i for i in range(100))
LARGE = b"".join(b"<p>line %d of a larger page, over the in-memory snapshot limit</p>\n" % i for i in range(2000))
PAST = "Sun, 06 Nov 1994 08:49:37 GMT"
FUTURE = "Fri, 01 Jan 2100 00:00:00 GMT"


@pytest.fixture
def site(dcserve_bin, tmp_path):
    root = tmp_path / "site"
    root.mkdir()
    (root / "small.html").write_bytes(SMALL)
    (root / "large.html").write_bytes(LARGE)
    with DCServe(dcserve_bin, ["--root", str(root), "--store", str(tmp_path / "store")]) as server:
        yield server, root


def get(server, path, accept=None, method="GET", **conditions):
    headers = {name.replace("_", "-"): value for name, value in conditions.items()}
    if accept is not None:
        headers["Accept-Encoding"] = accept
    return request(server.port, path, headers, method)


@pytest.mark.parametrize("path", ["/small.html", "/large.html"])
@pytest.mark.parametrize("accept", [None, "br, gzip"])
def test_if_match_compares_strongly_with_the_resource_state(site, path, accept):
    server, _ = site
    status, headers, _ = get(server, path)
    identity = headers["ETag"]
    assert status == 200 and identity.startswith('"')
    for tag in [identity, "*", f'"nope", {identity}']:
        assert get(server, path, accept, If_Match=tag)[0] == 200, tag
    for tag in ['"nope"', "W/" + identity, identity[:-1] + 'x"']:
        status, headers, body = get(server, path, accept, If_Match=tag)
        assert status == 412, (tag, status)
        assert headers.get("ETag") is None and headers.get("Content-Encoding") is None
    status, _, body = get(server, path, accept, method="HEAD", If_Match='"nope"')
    assert status == 412 and body == b""


@pytest.mark.parametrize("path", ["/small.html", "/large.html"])
def test_a_variant_etag_names_the_same_state_as_the_identity_etag(site, path):
    server, _ = site
    identity = get(server, path)[1]["ETag"]
    status, headers, _ = get(server, path, "br")
    variant = headers["ETag"]
    assert status == 200 and headers["Content-Encoding"] == "br" and variant != identity, dict(headers)
    assert variant.startswith("W/") and variant[2:].startswith(identity[:-1] + "-br"), variant
    for accept in ["br", "gzip", None]:
        assert get(server, path, accept, If_Match=variant)[0] == 200, accept
        assert get(server, path, accept, If_Match=identity)[0] == 200, accept


def test_if_unmodified_since(site):
    server, _ = site
    modified = get(server, "/small.html")[1]["Last-Modified"]
    for accept in [None, "br"]:
        assert get(server, "/small.html", accept, If_Unmodified_Since=PAST)[0] == 412
        assert get(server, "/small.html", accept, If_Unmodified_Since=modified)[0] == 200
        assert get(server, "/small.html", accept, If_Unmodified_Since=FUTURE)[0] == 200
        assert get(server, "/small.html", accept, If_Unmodified_Since="not a date")[0] == 200  # ignored
        # If-Match present: If-Unmodified-Since is not evaluated (§13.2.2 step 2).
        identity = get(server, "/small.html")[1]["ETag"]
        assert get(server, "/small.html", accept, If_Match=identity, If_Unmodified_Since=PAST)[0] == 200


def test_a_false_precondition_wins_over_not_modified(site):
    server, _ = site
    for accept in [None, "br"]:
        etag = get(server, "/small.html", accept)[1]["ETag"]
        assert get(server, "/small.html", accept, If_None_Match=etag)[0] == 304
        assert get(server, "/small.html", accept, If_None_Match=etag, If_Match='"nope"')[0] == 412
        assert get(server, "/small.html", accept, If_None_Match=etag, If_Unmodified_Since=PAST)[0] == 412


def test_tags_of_a_file_that_changed_no_longer_match(site):
    server, root = site
    identity = get(server, "/small.html")[1]["ETag"]
    variant = get(server, "/small.html", "br")[1]["ETag"]
    (root / "small.html").write_bytes(SMALL + b"<p>one more line</p>\n")
    later = time.time() + 5
    os.utime(root / "small.html", (later, later))
    deadline = time.monotonic() + 10
    while get(server, "/small.html")[1]["ETag"] == identity and time.monotonic() < deadline:
        time.sleep(0.1)
    for accept in [None, "br"]:
        assert get(server, "/small.html", accept, If_Match=identity)[0] == 412, accept
        assert get(server, "/small.html", accept, If_Match=variant)[0] == 412, accept
        before = email.utils.formatdate(later - 60, usegmt=True)
        assert get(server, "/small.html", accept, If_Unmodified_Since=before)[0] == 412, accept
