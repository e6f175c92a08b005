"""The CLI's basic contract, checked against tools that share no code with dcserve."""
import base64
import hashlib

from conftest import run


def test_version_reports_linked_libraries(dcserve_bin):
    out = run(dcserve_bin, "--version").stdout.decode()
    lines = out.splitlines()
    assert lines[0].startswith("dcserve ")
    brotli = next(l for l in lines if l.startswith("brotli "))
    major, minor, _ = (int(x) for x in brotli.split()[1].split("."))
    assert (major, minor) >= (1, 1), out
    assert any(l.startswith("zstd 1.") for l in lines), out
    assert any(l.startswith("OpenSSL 3") for l in lines), out


def test_hash_matches_hashlib(dcserve_bin, tmp_path):
    data = bytes(range(256)) * 1000
    f = tmp_path / "dict.bin"
    f.write_bytes(data)
    out = run(dcserve_bin, "hash", str(f)).stdout.decode().splitlines()
    digest = hashlib.sha256(data).digest()
    assert out[0] == digest.hex()
    assert out[1] == "Available-Dictionary: :" + base64.b64encode(digest).decode() + ":"


def test_hash_missing_file_is_a_clear_error(dcserve_bin, tmp_path):
    r = run(dcserve_bin, "hash", str(tmp_path / "nope"), check=False)
    assert r.returncode != 0
    assert b"nope" in r.stderr and r.stdout == b""
