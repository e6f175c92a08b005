"""Where `-o` writes, for every command that has it (fetch, compress, decompress, train): a regular
file is replaced atomically, anything else (a character device, a FIFO, `-` for standard output) is
written through and never replaced, a symbolic link is never replaced (its target is written), a
dangling link and a directory are refused.

Run as root (as CI is), `-o /dev/null` could replace the machine's /dev/null with a regular file. The
device checks therefore run first on a scratch character device made with mknod (the same device
numbers as /dev/null) in a temporary directory, and /dev/null itself is only written once that passed.
"""
from __future__ import annotations

import os
import pathlib
import stat
import subprocess
import threading

import pytest

from conftest import run
from dcserve_server import DCServe
from test_train import make_corpus

BODY = b"".join(b"line %d of a body that dcserve writes to its output\n" % i for i in range(4000))


@pytest.fixture
def server(dcserve_bin, tmp_path):
    root = tmp_path / "site"
    root.mkdir()
    (root / "body.txt").write_bytes(BODY)
    with DCServe(dcserve_bin, ["--root", str(root), "--store", str(tmp_path / "store"), "--dictionaries", "/nothing/*"]) as s:
        yield s


def fetch(dcserve_bin, tmp_path, url: str, output: str, check: bool = True) -> subprocess.CompletedProcess:
    return run(dcserve_bin, "fetch", "--no-links", "--store", str(tmp_path / "client"), "-o", output, url, check=check)


def scratch_null(tmp_path: pathlib.Path) -> pathlib.Path:
    device = tmp_path / "null"
    try:
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod needs root (CAP_MKNOD)")
    return device


def is_char_device(path: str | pathlib.Path) -> bool:
    return stat.S_ISCHR(os.lstat(path).st_mode)


class FifoReader:
    """Reads a FIFO to its end in a thread (the writer's open blocks until a reader opens it)."""

    def __init__(self, path: pathlib.Path):
        os.mkfifo(path)
        self.path, self.data = path, b""
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        with open(self.path, "rb") as f:
            self.data = f.read()

    def result(self) -> bytes:
        self.thread.join(timeout=60)
        assert not self.thread.is_alive()
        return self.data


def test_fetch_writes_through_a_device_and_a_fifo_and_replaces_only_regular_files(dcserve_bin, server, tmp_path):
    url = server.base + "/body.txt"
    device = scratch_null(tmp_path)
    fetch(dcserve_bin, tmp_path, url, str(device))
    assert is_char_device(device), "the device was replaced by a regular file"

    fifo = tmp_path / "fifo"
    reader = FifoReader(fifo)
    fetch(dcserve_bin, tmp_path, url, str(fifo))
    assert reader.result() == BODY
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)

    # /dev/null itself, now that a scratch device survived: still the character device afterwards.
    fetch(dcserve_bin, tmp_path, url, "/dev/null")
    assert is_char_device("/dev/null") and os.major(os.stat("/dev/null").st_rdev) == 1
    assert not any(p.name.startswith(".null.tmp") for p in pathlib.Path("/dev").iterdir())

    # A regular file is replaced (atomically: no temporary file is left), keeping its mode.
    target = tmp_path / "out.txt"
    target.write_bytes(b"old")
    target.chmod(0o640)
    fetch(dcserve_bin, tmp_path, url, str(target))
    assert target.read_bytes() == BODY and stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".out.txt")) == []

    # `-o -` is standard output.
    r = fetch(dcserve_bin, tmp_path, url, "-")
    assert r.stdout == BODY


def test_a_symlink_is_followed_never_replaced(dcserve_bin, server, tmp_path):
    url = server.base + "/body.txt"
    real = tmp_path / "real.txt"
    real.write_bytes(b"old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    fetch(dcserve_bin, tmp_path, url, str(link))
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_bytes() == BODY

    device = scratch_null(tmp_path)
    to_device = tmp_path / "to-device"
    to_device.symlink_to(device)
    fetch(dcserve_bin, tmp_path, url, str(to_device))
    assert to_device.is_symlink() and is_char_device(device)

    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "elsewhere" / "missing.txt")
    r = fetch(dcserve_bin, tmp_path, url, str(dangling), check=False)
    assert r.returncode == 1 and b"symbolic link" in r.stderr, r.stderr
    assert dangling.is_symlink() and not (tmp_path / "elsewhere").exists()

    r = fetch(dcserve_bin, tmp_path, url, str(tmp_path), check=False)
    assert r.returncode == 1 and b"is a directory" in r.stderr, r.stderr


def test_fetch_into_a_failing_decode_leaves_a_regular_file_alone(dcserve_bin, tmp_path):
    """A body that fails to decode (gzip announced, not gzip) never replaces the existing file."""
    import socket
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    port = sock.getsockname()[1]

    def serve():
        conn, _ = sock.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 10\r\n\r\nnot gzip!!")
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    target = tmp_path / "keep.txt"
    target.write_bytes(b"precious")
    r = fetch(dcserve_bin, tmp_path, f"http://127.0.0.1:{port}/x", str(target), check=False)
    thread.join(timeout=10)
    sock.close()
    assert r.returncode == 1 and b"response dropped" in r.stderr, r.stderr
    assert target.read_bytes() == b"precious"
    assert [p.name for p in tmp_path.iterdir() if ".tmp" in p.name] == []


def test_compress_decompress_and_train_write_through_devices(dcserve_bin, tmp_path):
    source = tmp_path / "in.txt"
    source.write_bytes(BODY)
    device = scratch_null(tmp_path)
    run(dcserve_bin, "compress", "-e", "zstd", str(source), "-o", str(device))
    assert is_char_device(device)
    compressed = tmp_path / "in.zst"
    run(dcserve_bin, "compress", "-e", "zstd", str(source), "-o", str(compressed))
    run(dcserve_bin, "decompress", str(compressed), "-o", str(device))
    assert is_char_device(device)

    fifo = tmp_path / "fifo"
    reader = FifoReader(fifo)
    run(dcserve_bin, "decompress", str(compressed), "-o", str(fifo))
    assert reader.result() == BODY

    r = run(dcserve_bin, "decompress", str(compressed), "-o", "-")
    assert r.stdout == BODY

    samples = make_corpus(tmp_path / "samples", count=40)
    r = run(dcserve_bin, "train", "--samples", str(samples), "--size", "4K", "--output", str(device), "--progress", "none",
            check=False, timeout=300)
    assert r.returncode == 0, r.stderr
    assert is_char_device(device)
    # `--output -`: the dictionary on standard output, the report on standard error.
    r = run(dcserve_bin, "train", "--samples", str(samples), "--size", "4K", "--output", "-", "--progress", "none",
            timeout=300)
    assert 0 < len(r.stdout) <= 4096 and b"advertise with" in r.stderr, r.stderr


def test_an_interrupted_fetch_leaves_no_temporary_file(dcserve_bin, tmp_path):
    """SIGINT in the middle of a body: the destination is untouched and the hidden temporary file is gone."""
    import signal
    import socket
    import time
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    port = sock.getsockname()[1]
    release = threading.Event()

    def serve():
        conn, _ = sock.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 1000)
            release.wait(30)
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    target = tmp_path / "out.txt"
    target.write_bytes(b"precious")
    proc = subprocess.Popen([dcserve_bin, "fetch", "--no-links", "--store", str(tmp_path / "client"), "-o", str(target),
                             f"http://127.0.0.1:{port}/slow"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not any(p.name.startswith(".out.txt.tmp") for p in tmp_path.iterdir()):
            assert time.monotonic() < deadline and proc.poll() is None, "no temporary file appeared"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) != 0
    finally:
        if proc.poll() is None:
            proc.kill()
        release.set()
        thread.join(timeout=10)
        sock.close()
    assert target.read_bytes() == b"precious"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.txt")] == []
