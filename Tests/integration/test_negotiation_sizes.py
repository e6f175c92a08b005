"""With both dictionary variants cached, Chromium's Accept-Encoding
(`gzip, deflate, br, zstd, dcb, dcz`, whose gzip/deflate sizes are never known) gets the smaller of
dcb and dcz, exactly as `Accept-Encoding: dcb, dcz` does."""
import base64
import hashlib
import json

from dcserve_server import DCServe
from decoders import dcb_with_brotli_cli, dcz_with_zstd_cli

V1 = b"".join(b"const item%d = render('first edition', %d);\n" % (i, i * 7) for i in range(600))
V2 = b"".join(b"const item%d = render('second edition', %d);\n" % (i, i * 11) for i in range(600))
CHROMIUM = "gzip, deflate, br, zstd, dcb, dcz"


def test_chromium_gets_the_smaller_cached_dictionary_coding(dcserve_bin, tmp_path, brotli_cli):
    root = tmp_path / "site"
    (root / "static").mkdir(parents=True)
    (root / "static/app.v1.js").write_bytes(V1)
    (root / "static/app.v2.js").write_bytes(V2)
    cfg = {"site": {"root": str(root)}, "store": {"path": str(tmp_path / "store")},
           # fast == best: no background re-encode changes a cached size during the test.
           "compression": {"precompress": False,
                           "levels": {"dcb": {"fast": 11, "best": 11}, "dcz": {"fast": 19, "best": 19}}},
           "dictionaries": {"rules": ["app"], "app": {"match": "/static/app.*.js", "maxAge": 86400}}}
    (tmp_path / "c.json").write_text(json.dumps(cfg))
    avail = ":" + base64.b64encode(hashlib.sha256(V1).digest()).decode() + ":"
    with DCServe(dcserve_bin, ["--config", str(tmp_path / "c.json"), "--no-access-log"]) as s:
        assert s.get("/static/app.v1.js")[0] == 200
        sizes = {}
        for coding in ("dcb", "dcz"):  # both variants cached, sizes known
            status, headers, body = s.get("/static/app.v2.js", {"Accept-Encoding": coding, "Available-Dictionary": avail})
            assert status == 200 and headers["Content-Encoding"] == coding
            sizes[coding] = body
        smaller = min(sizes, key=lambda c: (len(sizes[c]), c != "dcz"))
        for accept in (CHROMIUM, "dcb, dcz"):
            status, headers, body = s.get("/static/app.v2.js", {"Accept-Encoding": accept, "Available-Dictionary": avail})
            assert status == 200
            assert headers["Content-Encoding"] == smaller, (accept, {c: len(b) for c, b in sizes.items()})
            assert body == sizes[smaller]
        decoded = dcb_with_brotli_cli(body, V1, brotli_cli) if smaller == "dcb" else dcz_with_zstd_cli(body, V1)
        assert decoded == V2
    print({c: len(b) for c, b in sizes.items()}, "→", smaller)
