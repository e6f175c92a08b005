"""`dcserve decompress --decoder swift` (the pure-Swift PortableZstd decoder) against the zstd CLI's
output and dcserve's own dcz: the same bytes as the input and as `--decoder c` (libzstd), limits
refused with a message, dcb refused with a clear error."""
import hashlib
import random

import pytest

from conftest import run

DCZ_MAGIC = bytes.fromhex("5e2a4d1820000000")


@pytest.fixture(scope="module")
def material(tmp_path_factory):
    d = tmp_path_factory.mktemp("swiftdec")
    rng = random.Random(34)
    words = [rng.randbytes(rng.randint(3, 12)) for _ in range(2000)]
    dictionary = b" ".join(rng.choice(words) for _ in range(200_000))[: 1024 * 1024]
    (d / "dict").write_bytes(dictionary)
    data = bytearray(dictionary)
    for _ in range(300):
        at = rng.randrange(len(data) - 8)
        data[at:at + 4] = rng.randbytes(4)
    data = bytes(data) + rng.randbytes(50_000)
    (d / "in").write_bytes(data)
    return d, dictionary, data


def decode_both(dcserve_bin, d, body, name, *extra):
    outs = []
    for decoder in ("swift", "c"):
        out = d / f"{name}.{decoder}.out"
        run(dcserve_bin, "decompress", "--decoder", decoder, *extra, str(body), "-o", str(out))
        outs.append(out.read_bytes())
    return outs


@pytest.mark.parametrize("args", [["-1"], ["-9", "--no-check"], ["-19"], ["--ultra", "-22"]])
def test_zstd_cli_frames(dcserve_bin, material, args):
    d, _, data = material
    frame = d / f"plain{'_'.join(args)}.zst"
    run("zstd", "-q", "-f", *args, str(d / "in"), "-o", str(frame))
    swift, c = decode_both(dcserve_bin, d, frame, frame.name)
    assert swift == data and c == data


@pytest.mark.parametrize("level", ["-3", "-19"])
def test_zstd_cli_dcz_with_raw_dictionary(dcserve_bin, material, level):
    d, dictionary, data = material
    frame = d / f"delta{level}.zst"
    run("zstd", "-q", "-f", level, "-D", str(d / "dict"), str(d / "in"), "-o", str(frame))
    body = d / f"delta{level}.dcz"
    body.write_bytes(DCZ_MAGIC + hashlib.sha256(dictionary).digest() + frame.read_bytes())
    swift, c = decode_both(dcserve_bin, d, body, body.name, "-d", str(d / "dict"))
    assert swift == data and c == data


def test_dcserve_dcz_and_concatenated_frames(dcserve_bin, material):
    d, dictionary, data = material
    body = d / "own.dcz"
    run(dcserve_bin, "compress", "-e", "dcz", "-l", "3", "-d", str(d / "dict"), str(d / "in"), "-o", str(body))
    swift, c = decode_both(dcserve_bin, d, body, "own", "-d", str(d / "dict"))
    assert swift == data and c == data
    # Two frames back to back: the swift decoder returns both contents (RFC 8878 §3.1).
    a, b = d / "a.zst", d / "b.zst"
    run("zstd", "-q", "-f", "-3", str(d / "in"), "-o", str(a))
    run("zstd", "-q", "-f", "-3", str(d / "dict"), "-o", str(b))
    both = d / "both.zst"
    both.write_bytes(a.read_bytes() + b.read_bytes())
    run(dcserve_bin, "decompress", "--decoder", "swift", str(both), "-o", str(d / "both.out"))
    assert (d / "both.out").read_bytes() == data + dictionary


def test_limits_and_refusals(dcserve_bin, material):
    d, dictionary, data = material
    frame = d / "limit.zst"
    run("zstd", "-q", "-f", "-3", str(d / "in"), "-o", str(frame))
    r = run(dcserve_bin, "decompress", "--decoder", "swift", "--max-output", "1000", str(frame),
            "-o", str(d / "limit.out"), check=False)
    assert r.returncode != 0 and b"outputTooLarge" in r.stderr
    assert not (d / "limit.out").exists()
    damaged = d / "damaged.zst"
    raw = bytearray(frame.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    damaged.write_bytes(bytes(raw))
    r = run(dcserve_bin, "decompress", "--decoder", "swift", str(damaged), "-o", str(d / "damaged.out"), check=False)
    assert r.returncode != 0 and b"swift decoder" in r.stderr
    dcb = d / "own.dcb"
    run(dcserve_bin, "compress", "-e", "dcb", "-d", str(d / "dict"), str(d / "in"), "-o", str(dcb))
    r = run(dcserve_bin, "decompress", "--decoder", "swift", "-d", str(d / "dict"), str(dcb),
            "-o", str(d / "dcb.out"), check=False)
    assert r.returncode != 0 and b"--decoder swift decodes zstd and dcz only" in r.stderr
