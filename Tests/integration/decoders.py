"""Independent decoders for dcb/dcz bodies: none of them shares code with dcserve.

- dcz: the `zstd` CLI (the 40-byte header is a skippable frame, so it decodes the whole body) and
  Python `zstandard` with the dictionary loaded as raw content.
- dcb: the brotli >= 1.1 CLI built from the PyPI source distribution (`-D`), after the 36-byte header.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile

import zstandard

DCZ_MAGIC = bytes.fromhex("5e2a4d1820000000")
DCB_MAGIC = bytes.fromhex("ff444342")


def _tmp(data: bytes) -> str:
    f = tempfile.NamedTemporaryFile(delete=False)
    f.write(data)
    f.close()
    return f.name


def check_dcz_header(body: bytes, dictionary: bytes) -> None:
    assert body[:8] == DCZ_MAGIC, body[:8].hex()
    assert body[8:40] == hashlib.sha256(dictionary).digest(), "dcz header hash is not the dictionary's"


def check_dcb_header(body: bytes, dictionary: bytes) -> None:
    assert body[:4] == DCB_MAGIC, body[:4].hex()
    assert body[4:36] == hashlib.sha256(dictionary).digest(), "dcb header hash is not the dictionary's"


def dcz_with_zstd_cli(body: bytes, dictionary: bytes) -> bytes:
    check_dcz_header(body, dictionary)
    b, d = _tmp(body), _tmp(dictionary)
    try:
        return subprocess.run(["zstd", "-q", "-d", "-c", "--long=27", "-D", d, b], check=True,
                              capture_output=True, timeout=120).stdout
    finally:
        os.unlink(b), os.unlink(d)


def dcz_with_python_zstandard(body: bytes, dictionary: bytes) -> bytes:
    check_dcz_header(body, dictionary)
    d = zstandard.ZstdCompressionDict(dictionary, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
    dctx = zstandard.ZstdDecompressor(dict_data=d, max_window_size=1 << 27)
    return dctx.decompressobj().decompress(body[40:])


def dcb_with_brotli_cli(body: bytes, dictionary: bytes, brotli_cli: str) -> bytes:
    check_dcb_header(body, dictionary)
    b, d = _tmp(body[36:]), _tmp(dictionary)
    try:
        return subprocess.run([brotli_cli, "-d", "-c", "-D", d, b], check=True, capture_output=True,
                              timeout=120).stdout
    finally:
        os.unlink(b), os.unlink(d)


def decode_plain(body: bytes, coding: str, brotli_cli: str) -> bytes:
    """Decodes br / zstd / gzip / identity with independent tools."""
    if coding in ("", "identity"):
        return body
    if coding == "gzip":
        import gzip
        return gzip.decompress(body)
    if coding == "zstd":
        return zstandard.ZstdDecompressor().decompressobj().decompress(body)
    if coding == "br":
        b = _tmp(body)
        try:
            return subprocess.run([brotli_cli, "-d", "-c", b], check=True, capture_output=True, timeout=120).stdout
        finally:
            os.unlink(b)
    raise AssertionError(f"unexpected coding {coding!r}")
