"""`Accept-Encoding` where every coding has q < 1 and identity is not listed (RFC 9110 §12.5.3): an
unlisted identity ranks below every listed coding (as nginx and jshttp/negotiator read it), so
`br;q=0.9, gzip;q=0.8` gets br, not identity; the `DCServe-Decision` field names what was sent and
why. A coding outside the client's list is never sent. Bodies decoded with the brotli CLI and
Python's gzip. Release binary in quick mode (the decision field is on)."""
from __future__ import annotations

import pytest

from dcserve_server import DCServe
from decision_support import PAGE, V1, V2, available, make_site, request
from decoders import dcz_with_python_zstandard, decode_plain


@pytest.fixture(scope="module")
def quick(dcserve_bin, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ae")
    site = make_site(tmp / "site")
    with DCServe(dcserve_bin, ["--root", str(site), "--store", str(tmp / "store"),
                               "--dictionaries", "/static/app*"]) as server:
        assert request(server.port, "/static/app.v1.js")[0] == 200  # V1 becomes a dictionary
        yield server


@pytest.mark.parametrize("accept,coding", [
    ("br;q=0.9, gzip;q=0.8", "br"),
    ("gzip;q=0.8, br;q=0.9", "br"),
    ("gzip;q=0.5", "gzip"),
    ("gzip;q=0.2, br;q=0.1, x-custom;q=0.9", "gzip"),
    ("br;q=0.9, gzip;q=0.8, identity;q=1", "identity"),  # identity listed: it counts as listed
    ("br;q=0, gzip;q=0", "identity"),                      # nothing else acceptable
])
def test_unlisted_identity_ranks_below_every_listed_coding(quick, brotli_cli, accept, coding):
    status, headers, body = request(quick.port, "/page.html", {"Accept-Encoding": accept})
    assert status == 200
    assert (headers.get("Content-Encoding") or "identity") == coding, (accept, dict(headers))
    assert decode_plain(body, coding, brotli_cli) == PAGE
    assert headers["DCServe-Decision"].startswith(f"plain={coding} reason="), headers["DCServe-Decision"]


def test_dictionary_codings_below_one_still_win_over_an_unlisted_identity(quick):
    status, headers, body = request(quick.port, "/static/app.v2.js",
                                    {"Accept-Encoding": "dcz;q=0.9, br;q=0.5", "Available-Dictionary": available(V1)})
    assert status == 200 and headers.get("Content-Encoding") == "dcz", dict(headers)
    assert headers["DCServe-Decision"].startswith("delta=dcz "), headers["DCServe-Decision"]
    assert dcz_with_python_zstandard(body, V1) == V2


def test_a_coding_the_client_did_not_list_is_never_sent(quick):
    for accept in ["br;q=0.9, gzip;q=0.8", "gzip;q=0.1", "x-custom;q=0.5"]:
        listed = {m.split(";")[0].strip() for m in accept.split(",")} | {"identity"}
        for path in ["/page.html", "/static/app.v2.js", "/static/app.v1.js"]:
            status, headers, _ = request(quick.port, path, {"Accept-Encoding": accept})
            assert status == 200 and (headers.get("Content-Encoding") or "identity") in listed, (accept, path, dict(headers))
