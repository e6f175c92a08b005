"""dcserve's dcz/dcb output against independent decoders, and independent encoders' output against
dcserve's decoders: the zstd CLI, Python `zstandard` (raw-content dictionary) and the brotli CLI built
from source. A 2 MB dictionary; inputs of 0 B, 1 B, 100 KB, 5 MB and 20 MB that are revisions of it."""
import hashlib
import random

import pytest
import zstandard

from conftest import run

DCZ_MAGIC = bytes.fromhex("5e2a4d1820000000")
DCB_MAGIC = bytes.fromhex("ff444342")
SIZES = [0, 1, 100_000, 5_000_000, 20_000_000]


def revision(base: bytes, size: int, seed: int) -> bytes:
    """A new version of `base`: long runs copied from it with small random edits between them."""
    rng = random.Random(seed)
    parts, total = [], 0
    while total < size:
        if rng.random() < 0.2:
            piece = rng.randbytes(rng.randint(1, 40))
        else:
            length = rng.randint(1000, 60_000)
            start = rng.randrange(0, max(1, len(base) - length))
            piece = base[start:start + length]
        parts.append(piece)
        total += len(piece)
    return b"".join(parts)[:size]


@pytest.fixture(scope="module")
def material(tmp_path_factory):
    d = tmp_path_factory.mktemp("codec")
    rng = random.Random(2026)
    words = [rng.randbytes(rng.randint(3, 12)) for _ in range(3000)]
    dictionary = b" ".join(rng.choice(words) for _ in range(400_000))[: 2 * 1024 * 1024]
    assert len(dictionary) == 2 * 1024 * 1024
    (d / "dict").write_bytes(dictionary)
    inputs = {}
    for size in SIZES:
        data = revision(dictionary, size, seed=size)
        (d / f"in{size}").write_bytes(data)
        inputs[size] = data
    return d, dictionary, inputs


def header(magic: bytes, dictionary: bytes) -> bytes:
    return magic + hashlib.sha256(dictionary).digest()


@pytest.mark.parametrize("size", SIZES)
def test_dcz_output_decodes_with_zstd_cli_and_python_zstandard(dcserve_bin, material, size):
    d, dictionary, inputs = material
    body_path = d / f"out{size}.dcz"
    run(dcserve_bin, "compress", "-e", "dcz", "-l", "3", "-d", str(d / "dict"), str(d / f"in{size}"),
        "-o", str(body_path))
    body = body_path.read_bytes()
    assert body[:40] == header(DCZ_MAGIC, dictionary)
    # zstd CLI: the header is a skippable frame, so the whole body decodes as is.
    out = run("zstd", "-q", "-d", "-D", str(d / "dict"), "-c", str(body_path)).stdout
    assert out == inputs[size]
    # Python zstandard with the dictionary as raw content.
    zdict = zstandard.ZstdCompressionDict(dictionary, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
    frame = body[40:]
    params = zstandard.get_frame_parameters(frame)
    assert params.window_size <= 8 * 1024 * 1024  # RFC rule and Chromium's cap for a 2 MB dictionary
    assert params.has_checksum
    decoder = zstandard.ZstdDecompressor(dict_data=zdict, max_window_size=1 << 23).decompressobj()
    assert decoder.decompress(frame) == inputs[size]
    if size >= 5_000_000:
        plain = zstandard.ZstdCompressor(level=3).compress(inputs[size])
        assert len(body) < len(plain) / 2, "dictionary not used across the input"


@pytest.mark.parametrize("size", SIZES)
def test_dcb_output_decodes_with_brotli_cli(dcserve_bin, brotli_cli, material, size):
    d, dictionary, inputs = material
    body_path = d / f"out{size}.dcb"
    run(dcserve_bin, "compress", "-e", "dcb", "-l", "5", "-d", str(d / "dict"), str(d / f"in{size}"),
        "-o", str(body_path))
    body = body_path.read_bytes()
    assert body[:36] == header(DCB_MAGIC, dictionary)
    stream = d / f"out{size}.br"
    stream.write_bytes(body[36:])
    out = run(brotli_cli, "-d", "-D", str(d / "dict"), "-c", str(stream)).stdout
    assert out == inputs[size]
    info = run(dcserve_bin, "inspect", str(body_path)).stdout.decode()
    assert "coding: dcb" in info and hashlib.sha256(dictionary).hexdigest() in info


@pytest.mark.parametrize("size", [1, 100_000, 5_000_000])
@pytest.mark.parametrize("mode", ["--patch-from", "-D"])
def test_zstd_cli_output_with_header_decodes_with_dcserve(dcserve_bin, material, size, mode):
    d, dictionary, inputs = material
    frame = d / f"cli{size}{mode}.zst"
    run("zstd", "-q", "-f", "-3", mode, str(d / "dict"), str(d / f"in{size}"), "-o", str(frame))
    body = d / f"cli{size}{mode}.dcz"
    body.write_bytes(header(DCZ_MAGIC, dictionary) + frame.read_bytes())
    out = d / f"cli{size}{mode}.out"
    run(dcserve_bin, "decompress", "-d", str(d / "dict"), str(body), "-o", str(out))
    assert out.read_bytes() == inputs[size]


def test_zstd_cli_20mb_and_window_limit(dcserve_bin, material):
    d, dictionary, inputs = material
    # zstd -D keeps the level's window (2 MiB at level 3): decodes within the standard limit.
    frame = d / "cli20.zst"
    run("zstd", "-q", "-f", "-3", "-D", str(d / "dict"), str(d / "in20000000"), "-o", str(frame))
    body = d / "cli20.dcz"
    body.write_bytes(header(DCZ_MAGIC, dictionary) + frame.read_bytes())
    run(dcserve_bin, "decompress", "-d", str(d / "dict"), str(body), "-o", str(d / "cli20.out"))
    assert (d / "cli20.out").read_bytes() == inputs[20_000_000]
    # --patch-from sizes the window to the file (32 MiB): more than a client must accept for a
    # 2 MB dictionary, so dcserve refuses it by default and accepts it with a raised limit.
    run("zstd", "-q", "-f", "-3", "--patch-from", str(d / "dict"), str(d / "in20000000"), "-o", str(frame))
    body.write_bytes(header(DCZ_MAGIC, dictionary) + frame.read_bytes())
    r = run(dcserve_bin, "decompress", "-d", str(d / "dict"), str(body), "-o", str(d / "big.out"), check=False)
    assert r.returncode != 0 and b"window" in r.stderr
    assert not (d / "big.out").exists()
    run(dcserve_bin, "decompress", "--max-window-log", "27", "-d", str(d / "dict"), str(body),
        "-o", str(d / "big.out"))
    assert (d / "big.out").read_bytes() == inputs[20_000_000]


@pytest.mark.parametrize("size", [1, 100_000, 5_000_000, 20_000_000])
def test_brotli_cli_output_with_header_decodes_with_dcserve(dcserve_bin, brotli_cli, material, size):
    d, dictionary, inputs = material
    stream = d / f"cli{size}.br"
    run(brotli_cli, "-f", "-q", "5", "-w", "24", "-D", str(d / "dict"), str(d / f"in{size}"), "-o", str(stream))
    body = d / f"cli{size}.dcb"
    body.write_bytes(header(DCB_MAGIC, dictionary) + stream.read_bytes())
    out = d / f"cli{size}.dcb.out"
    run(dcserve_bin, "decompress", "-d", str(d / "dict"), str(body), "-o", str(out))
    assert out.read_bytes() == inputs[size]


@pytest.mark.parametrize("coding,tool", [("zstd", "zstd"), ("gzip", "gzip"), ("br", "brotli")])
def test_plain_codings_interoperate(dcserve_bin, brotli_cli, material, coding, tool):
    d, _, inputs = material
    exe = brotli_cli if tool == "brotli" else tool
    src = d / "in100000"
    ours = d / f"plain.{coding}"
    run(dcserve_bin, "compress", "-e", coding, "-l", "5", str(src), "-o", str(ours))
    assert run(exe, "-d", "-c", str(ours)).stdout == inputs[100_000]
    theirs = d / f"theirs.{coding}"
    theirs.write_bytes(run(exe, "-c", str(src)).stdout)
    back = d / f"theirs.{coding}.out"
    run(dcserve_bin, "decompress", "-e", coding, str(theirs), "-o", str(back))
    assert back.read_bytes() == inputs[100_000]


def test_decompress_errors_are_clear(dcserve_bin, material, tmp_path):
    d, dictionary, _ = material
    body = tmp_path / "b.dcz"
    run(dcserve_bin, "compress", "-e", "dcz", "-l", "1", "-d", str(d / "dict"), str(d / "in100000"), "-o", str(body))
    digest = hashlib.sha256(dictionary).hexdigest()
    out = tmp_path / "out"
    # Missing dictionary: names the hash that is needed.
    r = run(dcserve_bin, "decompress", str(body), "-o", str(out), check=False)
    assert r.returncode != 0 and digest.encode() in r.stderr and b"--dictionary" in r.stderr
    # Wrong dictionary.
    r = run(dcserve_bin, "decompress", "-d", str(d / "in1"), str(body), "-o", str(out), check=False)
    assert r.returncode != 0 and b"not the dictionary" in r.stderr
    # Truncated and trailing garbage: typed errors, no output file left behind.
    data = body.read_bytes()
    (tmp_path / "t.dcz").write_bytes(data[:-5])
    r = run(dcserve_bin, "decompress", "-d", str(d / "dict"), str(tmp_path / "t.dcz"), "-o", str(out), check=False)
    assert r.returncode != 0 and b"truncated" in r.stderr
    (tmp_path / "g.dcz").write_bytes(data + b"junk")
    r = run(dcserve_bin, "decompress", "-d", str(d / "dict"), str(tmp_path / "g.dcz"), "-o", str(out), check=False)
    assert r.returncode != 0 and b"trailing" in r.stderr
    # Decompression bomb guard.
    r = run(dcserve_bin, "decompress", "--max-output", "1000", "-d", str(d / "dict"), str(body), "-o", str(out),
            check=False)
    assert r.returncode != 0 and b"limit" in r.stderr
    assert not out.exists()
    # Brotli has no magic: without --encoding the CLI says so.
    (tmp_path / "x.br").write_bytes(b"\x0b\x02\x80hello\x03")
    r = run(dcserve_bin, "decompress", str(tmp_path / "x.br"), "-o", str(out), check=False)
    assert r.returncode != 0 and b"--encoding br" in r.stderr


def test_compress_usage_errors(dcserve_bin, material, tmp_path):
    d, _, _ = material
    r = run(dcserve_bin, "compress", "-e", "dcz", str(d / "in1"), "-o", str(tmp_path / "o"), check=False)
    assert r.returncode != 0 and b"--dictionary" in r.stderr
    r = run(dcserve_bin, "compress", "-e", "gzip", "-d", str(d / "dict"), str(d / "in1"), "-o", str(tmp_path / "o"),
            check=False)
    assert r.returncode != 0
    r = run(dcserve_bin, "compress", "-e", "zstd", "-l", "99", str(d / "in1"), "-o", str(tmp_path / "o"), check=False)
    assert r.returncode != 0 and b"level" in r.stderr
    r = run(dcserve_bin, "compress", "-e", "zstd", str(tmp_path / "missing"), "-o", str(tmp_path / "o"), check=False)
    assert r.returncode != 0 and b"missing" in r.stderr
    assert not (tmp_path / "o").exists()
