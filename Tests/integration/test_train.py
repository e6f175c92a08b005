"""`dcserve train`: determinism, raw output usable by independent decoders, independently recomputed
evaluation, sample sources, progress and every bad input (message + exit code, nothing half-written)."""
import hashlib
import http.server
import json
import os
import random
import socket
import stat
import threading

import pytest
import zstandard

import store_records
from conftest import run

SIZE = 16 * 1024
ZSTD_DICT_MAGIC = bytes.fromhex("37a430ec")
WORDS = ("dictionary compression transport response header brotli zstandard window frame offset "
         "match pattern server client cache vary encoding sample held training seed entropy").split()


def make_corpus(directory, count=80, seed=7):
    """Deterministic HTML-like pages sharing a template, with varying bodies (3-9 KB each)."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        body = "".join(
            f"<p class=\"para\">{' '.join(rng.choice(WORDS) for _ in range(rng.randint(20, 60)))}</p>\n"
            for _ in range(rng.randint(6, 20)))
        page = (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Page {i} — dcserve docs</title>\n"
                "<link rel=\"stylesheet\" href=\"/static/site.css\"><script src=\"/static/app.js\" defer></script></head>\n"
                "<body><nav class=\"top\"><a href=\"/\">Home</a> · <a href=\"/docs/\">Docs</a> · <a href=\"/api/\">API</a></nav>\n"
                f"<main><h1>Section {i}</h1>\n{body}</main>\n"
                "<footer>© dcserve authors · <a href=\"/license\">License</a> · built with care</footer></body></html>\n")
        sub = directory / ("docs" if i % 2 else "guide")
        sub.mkdir(exist_ok=True)
        (sub / f"page{i:03}.html").write_text(page)
    return directory


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("corpus") / "site")


@pytest.fixture(scope="module")
def trained(dcserve_bin, corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("trained") / "site.dict"
    r = run(dcserve_bin, "train", "--samples", str(corpus), "--size", "16K", "--output", str(out),
            "--match", "/docs/*", "--json", "--progress", "none")
    return out, json.loads(r.stdout), corpus


def test_output_is_raw_content_of_the_requested_size(trained):
    out, report, _ = trained
    data = out.read_bytes()
    assert 0 < len(data) <= SIZE
    assert not data.startswith(ZSTD_DICT_MAGIC)
    assert report["dictionary"]["bytes"] == len(data)
    assert report["dictionary"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert report["samples"]["heldOut"] == 16 and report["samples"]["training"] + report["samples"]["validation"] == 64
    assert [c["method"] for c in report["candidates"]] == ["newest-sample"] + ["cover-refined"] * 3
    assert sum(c["chosen"] for c in report["candidates"]) == 1


def test_training_is_deterministic(dcserve_bin, trained, tmp_path):
    out, report, corpus = trained
    again = tmp_path / "again.dict"
    r = run(dcserve_bin, "train", "--samples", str(corpus), "--size", "16K", "--output", str(again), "--json",
            "--progress", "none")
    assert again.read_bytes() == out.read_bytes()
    assert json.loads(r.stdout)["samples"]["heldOutNames"] == report["samples"]["heldOutNames"]
    other = tmp_path / "seed1.dict"
    r = run(dcserve_bin, "train", "--samples", str(corpus), "--size", "16K", "--output", str(other), "--json",
            "--seed", "1", "--progress", "none")
    assert json.loads(r.stdout)["samples"]["heldOutNames"] != report["samples"]["heldOutNames"]


def test_dictionary_works_for_dcz_and_dcb_with_independent_decoders(dcserve_bin, brotli_cli, trained, tmp_path):
    out, report, corpus = trained
    name = report["samples"]["heldOutNames"][0]
    original = (corpus / name).read_bytes()
    dictionary = out.read_bytes()
    dcz, dcb = tmp_path / "body.dcz", tmp_path / "body.dcb"
    run(dcserve_bin, "compress", "-e", "dcz", "-d", str(out), "-l", "19", "-o", str(dcz), str(corpus / name))
    run(dcserve_bin, "compress", "-e", "dcb", "-d", str(out), "-l", "11", "-o", str(dcb), str(corpus / name))
    digest = hashlib.sha256(dictionary).digest()
    assert dcz.read_bytes()[8:40] == digest and dcb.read_bytes()[4:36] == digest
    # zstd CLI: the dcz header is a skippable frame; a file without the zstd magic is raw content.
    assert run("zstd", "-q", "-d", "-c", "-D", str(out), str(dcz)).stdout == original
    # Python zstandard with an explicitly raw-content dictionary.
    raw = zstandard.ZstdCompressionDict(dictionary, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
    assert zstandard.ZstdDecompressor(dict_data=raw).decompress(dcz.read_bytes()[40:]) == original
    # brotli >= 1.1 CLI with the dictionary attached as raw prefix.
    stream = tmp_path / "body.br"
    stream.write_bytes(dcb.read_bytes()[36:])
    assert run(brotli_cli, "-d", "-c", "-D", str(out), str(stream)).stdout == original
    # And the dictionary really helps.
    assert len(dcz.read_bytes()) < len(zstandard.ZstdCompressor(level=19).compress(original))


def test_evaluation_is_recomputed_independently(trained):
    out, report, corpus = trained
    names = report["samples"]["heldOutNames"]
    held = [(corpus / n).read_bytes() for n in names]
    evaluation = report["evaluation"]
    codings = {c["coding"]: c["bytes"] for c in evaluation["codings"]}
    assert evaluation["responses"] == len(held)
    assert evaluation["identityBytes"] == sum(map(len, held))
    raw = zstandard.ZstdCompressionDict(out.read_bytes(), dict_type=zstandard.DICT_TYPE_RAWCONTENT)
    with_dict = sum(len(zstandard.ZstdCompressor(level=19, dict_data=raw, write_checksum=True).compress(h)) + 40
                    for h in held)
    plain = sum(len(zstandard.ZstdCompressor(level=19, write_checksum=True).compress(h)) for h in held)
    # Same library, same level: only frame-header fields (window descriptor) may differ by a few bytes.
    assert abs(with_dict - codings["dcz-19"]) <= 4 * len(held), (with_dict, codings["dcz-19"])
    assert abs(plain - codings["zstd-19"]) <= 4 * len(held), (plain, codings["zstd-19"])
    assert codings["dcz-19"] < codings["zstd-19"]
    for c in evaluation["codings"]:
        assert c["savedPercent"] == pytest.approx(100 * (1 - c["bytes"] / evaluation["identityBytes"]))
    # Break-even: dictionary transfer cost / bytes saved per response, rounded up.
    be = {b["coding"]: b for b in evaluation["breakEven"]}
    per = (codings["zstd-19"] - codings["dcz-19"]) / len(held)
    assert be["dcz-19"]["responses"] == -(-evaluation["dictionaryTransferBytes"] // per)


def test_store_entry_and_config_snippet(dcserve_bin, corpus, tmp_path):
    store = tmp_path / "dictionaries"
    out = tmp_path / "news.dict"
    r = run(dcserve_bin, "train", "--samples", str(corpus), "--size", "16K", "--output", str(out),
            "--store", str(store), "--match", "/docs/*", "--match-dest", "document", "--id", "news-1",
            "--progress", "none")
    text = r.stdout.decode()
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    # The dictionary and its record, in the store serve opens (its SQLite database).
    assert store_records.blob(store, digest) == out.read_bytes()
    [record] = store_records.records(store)
    assert record["match"] == "/docs/*" and record["hash"] == digest and record["partition"] is None
    assert stat.S_IMODE((store / store_records.DATABASE).stat().st_mode) == 0o600
    assert 'Link: </dictionaries/news.dict>; rel="compression-dictionary"' in text
    snippet = json.loads(text[text.index("{", text.index("configuration")):text.index("advertise with:")])
    entry = snippet["outOfBand"]["news"]
    assert snippet["outOfBand"]["names"] == ["news"]
    assert entry["file"] == str(out) and entry["match"] == "/docs/*" and entry["matchDest"] == ["document"]
    assert entry["id"] == "news-1" and entry["path"] == "/dictionaries/news.dict"


def test_include_exclude_globs(dcserve_bin, corpus, tmp_path):
    r = run(dcserve_bin, "train", "--samples", str(corpus), "--size", "8K", "--output", str(tmp_path / "d"),
            "--include", "docs/*.html", "--exclude", "page001.html", "--json", "--progress", "none")
    report = json.loads(r.stdout)
    s = report["samples"]
    assert s["training"] + s["validation"] + s["heldOut"] == 39
    assert all(n.startswith("docs/") for n in s["heldOutNames"])


class _Pages(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path != "/big":
            return super().do_GET()
        # Larger than the sample fetcher's 32 MiB limit.
        self.send_response(200)
        self.send_header("Content-Length", str(33 << 20))
        self.end_headers()
        try:
            for _ in range(33):
                self.wfile.write(b"x" * (1 << 20))
        except OSError:
            pass


def test_samples_from_urls(dcserve_bin, corpus, tmp_path):
    handler = lambda *a, **k: _Pages(*a, directory=str(corpus), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        names = sorted(str(p.relative_to(corpus)) for p in corpus.rglob("*.html"))[:30]
        urls = tmp_path / "urls.txt"
        urls.write_text("# pages\n" + "\n".join(f"http://127.0.0.1:{port}/{n}" for n in names) + "\n")
        r = run(dcserve_bin, "train", "--urls", str(urls), "--size", "8K", "--output", str(tmp_path / "u.dict"),
                "--json", "--progress", "none")
        report = json.loads(r.stdout)
        held = report["samples"]["heldOutNames"]
        assert all(h.startswith(f"http://127.0.0.1:{port}/") for h in held)
        assert report["evaluation"]["identityBytes"] == sum(
            (corpus / h.split(f":{port}/", 1)[1]).stat().st_size for h in held)
        missing = tmp_path / "missing.txt"
        missing.write_text(f"http://127.0.0.1:{port}/nope.html\n")
        r = run(dcserve_bin, "train", "--urls", str(missing), "--output", str(tmp_path / "m.dict"), check=False)
        assert r.returncode != 0 and b"nope.html" in r.stderr and b"404" in r.stderr
        assert not (tmp_path / "m.dict").exists()
        for line, reason in [("ftp://127.0.0.1/x", b"not a valid http:// or https:// URL"),
                             (f"http://127.0.0.1:{port}/big", b"larger than"),
                             (f"http://127.0.0.1:{_free_port()}/x", b"127.0.0.1")]:
            (tmp_path / "bad.txt").write_text(line + "\n")
            r = run(dcserve_bin, "train", "--urls", str(tmp_path / "bad.txt"), "--output", str(tmp_path / "b.dict"), check=False)
            assert r.returncode != 0 and reason in r.stderr and line.encode() in r.stderr, r.stderr
            assert not (tmp_path / "b.dict").exists()
    finally:
        server.shutdown()
        server.server_close()


def test_progress_lines_when_not_a_terminal(dcserve_bin, corpus, tmp_path):
    r = run(dcserve_bin, "train", "--samples", str(corpus), "--size", "8K", "--output", str(tmp_path / "p.dict"))
    err = r.stderr.decode()
    assert "train: [" in err and "elapsed" in err and "train: done in" in err
    assert "\x1b[" not in err  # no terminal control sequences in logs


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _bad(dcserve_bin, tmp_path, *args):
    out = tmp_path / "out" / "bad.dict"
    out.parent.mkdir(exist_ok=True)
    store = tmp_path / "store"
    r = run(dcserve_bin, "train", "--output", str(out), "--store", str(store), "--match", "/p/*",
            "--progress", "none", *args, check=False)
    assert r.returncode != 0, r.stdout
    assert r.stdout == b""
    assert os.listdir(out.parent) == []  # nothing half-written next to --output
    # Nothing stored: the store (opened first, so a bad one fails fast) holds no dictionary.
    assert not store.exists() or [f for f in os.listdir(store)
                                  if not f.startswith(".") and not f.startswith(store_records.DATABASE)] == []
    assert store_records.records(store) == []
    return r.stderr.decode()


def test_bad_missing_directory(dcserve_bin, tmp_path):
    err = _bad(dcserve_bin, tmp_path, "--samples", str(tmp_path / "nowhere"))
    assert "nowhere: no such directory" in err


def test_bad_empty_directory(dcserve_bin, tmp_path):
    (tmp_path / "empty").mkdir()
    err = _bad(dcserve_bin, tmp_path, "--samples", str(tmp_path / "empty"))
    assert "no sample files" in err


def test_bad_too_few_samples(dcserve_bin, tmp_path):
    make_corpus(tmp_path / "few", count=6)
    err = _bad(dcserve_bin, tmp_path, "--samples", str(tmp_path / "few"))
    assert "too few samples: found 6 usable, need at least 10" in err and "at least 5 training samples" in err


def test_bad_all_samples_tiny(dcserve_bin, tmp_path):
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    for i in range(30):
        (tiny / f"t{i}.txt").write_text(f"x{i}")
    err = _bad(dcserve_bin, tmp_path, "--samples", str(tiny))
    assert "all 30 samples are smaller than 32 bytes" in err


def test_bad_unreadable_file(dcserve_bin, tmp_path):
    corpus = make_corpus(tmp_path / "c", count=20)
    loop = corpus / "loop.html"
    os.symlink(loop, loop)  # a link to itself: stat fails (ELOOP) even for root
    err = _bad(dcserve_bin, tmp_path, "--samples", str(corpus))
    assert "loop.html: cannot stat" in err
    if os.geteuid() != 0:
        os.unlink(loop)
        (corpus / "guide" / "page000.html").chmod(0)
        err = _bad(dcserve_bin, tmp_path, "--samples", str(corpus))
        assert "page000.html: cannot read" in err


def test_bad_unreachable_url(dcserve_bin, tmp_path):
    urls = tmp_path / "urls.txt"
    port = _free_port()
    urls.write_text(f"http://127.0.0.1:{port}/a.html\n")
    err = _bad(dcserve_bin, tmp_path, "--urls", str(urls))
    assert f"http://127.0.0.1:{port}/a.html: cannot connect" in err


def test_bad_size_and_options(dcserve_bin, corpus, tmp_path):
    err = _bad(dcserve_bin, tmp_path, "--samples", str(corpus), "--size", "12Q")
    assert "--size 12Q" in err
    err = _bad(dcserve_bin, tmp_path, "--samples", str(corpus), "--size", "100")
    assert "out of range" in err
    err = _bad(dcserve_bin, tmp_path)
    assert "--samples" in err
    r = run(dcserve_bin, "train", "--samples", str(corpus), "--output", str(tmp_path / "no" / "dir" / "x.dict"),
            check=False)
    assert r.returncode != 0 and b"does not exist" in r.stderr


def test_end_to_end_trained_dictionary_served_out_of_band(dcserve_bin, brotli_cli, corpus, tmp_path):
    """Train, start `dcserve serve` with the printed snippet, fetch a held-out page with the dictionary's
    hash and decode the dcz/dcb answers with independent decoders."""
    import base64

    from dcserve_server import DCServe

    out = tmp_path / "site.dict"
    r = run(dcserve_bin, "train", "--samples", str(corpus), "--size", "16K", "--output", str(out),
            "--match", "/docs/*", "--name", "site", "--json", "--progress", "none")
    report = json.loads(r.stdout)
    dictionary = out.read_bytes()
    config = {"site": {"root": str(corpus)}, "store": {"path": str(tmp_path / "store")},
              "compression": {"precompress": False}}
    config.update(report["config"])
    (tmp_path / "dcserve.json").write_text(json.dumps(config))
    page = next(n for n in report["samples"]["heldOutNames"] if n.startswith("docs/"))
    original = (corpus / page).read_bytes()
    available = ":" + base64.b64encode(hashlib.sha256(dictionary).digest()).decode() + ":"
    with DCServe(dcserve_bin, ["--config", str(tmp_path / "dcserve.json")]) as server:
        status, headers, body = server.get("/" + page)
        assert status == 200 and body == original
        assert report["link"].split(": ", 1)[1] in headers.get_all("Link")
        status, headers, body = server.get("/dictionaries/site.dict")
        assert status == 200 and body == dictionary and "Use-As-Dictionary" in headers
        status, headers, body = server.get("/" + page, {"Accept-Encoding": "dcz", "Available-Dictionary": available})
        assert status == 200 and headers["Content-Encoding"] == "dcz", server.logs()
        assert body[8:40] == hashlib.sha256(dictionary).digest()
        (tmp_path / "page.dcz").write_bytes(body)
        assert run("zstd", "-q", "-d", "-c", "-D", str(out), str(tmp_path / "page.dcz")).stdout == original
        raw = zstandard.ZstdCompressionDict(dictionary, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
        assert zstandard.ZstdDecompressor(dict_data=raw).decompress(body[40:]) == original
        status, headers, body = server.get("/" + page, {"Accept-Encoding": "dcb", "Available-Dictionary": available})
        assert status == 200 and headers["Content-Encoding"] == "dcb", server.logs()
        (tmp_path / "page.br").write_bytes(body[36:])
        assert run(brotli_cli, "-d", "-c", "-D", str(out), str(tmp_path / "page.br")).stdout == original


def _write_store_entry(store, data, rule, path):
    digest = hashlib.sha256(data).hexdigest()
    (store / digest).write_bytes(data)
    (store / (digest + ".json")).write_text(json.dumps({
        "format_version": 1, "hash": digest, "match": "/docs/*", "path_pattern": "/docs/*", "match_dest": [],
        "rule": rule, "source_path": path, "first_served": "2026-01-01T00:00:00Z",
        "last_served": "2026-01-01T00:00:00Z", "max_age": 86400, "byte_size": len(data)}))


def test_samples_from_store_rule(dcserve_bin, corpus, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    pages = sorted(corpus.rglob("*.html"))
    for p in pages[:24]:
        _write_store_entry(store, p.read_bytes(), "docs", "/" + str(p.relative_to(corpus)))
    for p in pages[24:30]:
        _write_store_entry(store, p.read_bytes(), "other", "/" + str(p.relative_to(corpus)))
    r = run(dcserve_bin, "train", "--store", str(store), "--rule", "docs", "--size", "8K",
            "--output", str(tmp_path / "s.dict"), "--json", "--progress", "none")
    s = json.loads(r.stdout)["samples"]
    assert s["training"] + s["validation"] + s["heldOut"] == 24
    r = run(dcserve_bin, "train", "--store", str(store), "--rule", "nope", "--output", str(tmp_path / "n.dict"),
            check=False)
    assert r.returncode != 0 and b'no responses for rule "nope"' in r.stderr
    assert not (tmp_path / "n.dict").exists()


def test_held_out_zero_trains_on_every_sample_given(dcserve_bin, trained, tmp_path):
    """With the caller's own held-out pages kept outside the samples, `--held-out 0`
    holds out nothing more; the chosen method is rebuilt from all given samples (training + validation)."""
    _, report, corpus = trained
    assert report["samples"]["rebuiltFrom"] == report["samples"]["training"] + report["samples"]["validation"]
    out = tmp_path / "all.dict"
    r = run(dcserve_bin, "train", "--samples", str(corpus), "--size", "16K", "--held-out", "0", "--output", str(out),
            "--json", "--progress", "none")
    all_samples = json.loads(r.stdout)
    s = all_samples["samples"]
    assert s["heldOut"] == 0 and s["heldOutNames"] == [] and s["training"] + s["validation"] == 80
    assert s["rebuiltFrom"] == 80
    assert all_samples["evaluation"]["responses"] == 0
    assert 0 < len(out.read_bytes()) <= SIZE and not out.read_bytes().startswith(ZSTD_DICT_MAGIC)
    text = run(dcserve_bin, "train", "--samples", str(corpus), "--size", "16K", "--held-out", "0", "--output",
               str(tmp_path / "t.dict"), "--progress", "none").stdout.decode()
    assert "built again from 80 samples" in text and "none (--held-out 0)" in text
    assert (tmp_path / "t.dict").read_bytes() == out.read_bytes()  # deterministic
    bad = run(dcserve_bin, "train", "--samples", str(corpus), "--held-out", "1.5", "--output", str(tmp_path / "b.dict"),
              check=False)
    assert bad.returncode != 0 and b"held-out fraction" in bad.stderr and not (tmp_path / "b.dict").exists()
