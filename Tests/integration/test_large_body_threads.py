"""Large-body compression waits on dcserve's own threads, not Dispatch's shared pool (on Linux that pool
adds about one thread per second while its threads wait, and serves its queue in order): while forty
clients ask for the same large file's dcz, whose one encode is slow, another client's large gzip
response is answered at once; then all forty get the one encode's bytes. Real binary, real sockets,
the delta decoded with the zstd CLI."""
from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
import threading
import time

from dcserve_server import DCServe
from decoders import dcz_with_zstd_cli

from paths import ROOT
V1 = (ROOT / "examples/site/static/app.v1.js").read_bytes()


def available(data: bytes) -> str:
    return ":" + base64.b64encode(hashlib.sha256(data).digest()).decode() + ":"


def varied_script(seed: int, lines: int) -> bytes:
    """Compressible but not trivially so (level 19 takes its time on megabytes of it)."""
    return b"".join(b"const v%d_%07d = compute(%d, '%x');\n" % (seed, i, i * 7919 % 100_003, i * 2654435761 % 2**32)
                    for i in range(lines))


def test_identical_large_deltas_in_progress_do_not_hold_up_another_large_response(dcserve_bin, tmp_path):
    root = tmp_path / "site"
    (root / "static").mkdir(parents=True)
    (root / "static/app.v1.js").write_bytes(V1)
    big = varied_script(1, 450_000)  # ~21 MB: dcz at level 19 takes seconds (~2.5 s on a fast machine)
    other = varied_script(2, 8_000)  # ~300 KB: compressed off the event loop, at gzip's fast level
    (root / "static/big.js").write_bytes(big)
    (root / "static/other.js").write_bytes(other)
    config = {
        "site": {"root": str(root)}, "store": {"path": str(tmp_path / "store")},
        "compression": {"precompress": False, "levels": {"dcz": {"fast": 19, "best": 19}}},
        "admin": {"enabled": True},
        "dictionaries": {"rules": ["bundle"],
                         "bundle": {"resources": "/static/app.*.js", "match": "/static/*.js", "maxAge": 86400}},
    }
    path = tmp_path / "dcserve.json"
    path.write_text(json.dumps(config))
    with DCServe(dcserve_bin, ["--config", str(path)]) as server:
        assert server.get("/static/app.v1.js", {"Accept-Encoding": "identity"})[0] == 200  # stored
        finished: list = []  # (name, monotonic time, status, headers, body digest), in completion order
        bodies: dict = {}  # digest -> body
        lock = threading.Lock()

        def fetch(name: str, target: str, headers: dict) -> None:
            status, h, body = server.get(target, headers)
            digest = hashlib.sha256(body).digest()
            with lock:
                finished.append((name, time.monotonic(), status, h, digest))
                bodies.setdefault(digest, body)

        delta = {"Accept-Encoding": "gzip, dcz", "Available-Dictionary": available(V1)}
        clients = [threading.Thread(target=fetch, args=(f"dcz{i}", "/static/big.js", delta)) for i in range(40)]
        for t in clients:
            t.start()
        time.sleep(0.5)  # the forty requests have reached the server: one encodes, the rest wait for it
        asked = time.monotonic()
        fetch("gzip", "/static/other.js", {"Accept-Encoding": "gzip"})
        with lock:
            waited = next(t for name, t, *_ in finished if name == "gzip") - asked
        for t in clients:
            t.join(timeout=120)
        assert not any(t.is_alive() for t in clients), server.logs()[-3000:]
        order = [name for name, *_ in finished]
        # The gzip response came while the dcz encode was still running (when the waiting requests
        # held Dispatch's pool, it queued behind them and came after them).
        assert order.index("gzip") == 0, \
            f"gzip finished after {order.index('gzip')} dcz responses, {waited:.1f} s after it was asked: {order}"
        deltas = set()
        for name, _, status, headers, digest in finished:
            assert status == 200
            if name == "gzip":
                assert headers["Content-Encoding"] == "gzip" and gzip.decompress(bodies[digest]) == other
            else:
                assert headers["Content-Encoding"] == "dcz"
                deltas.add(digest)
        assert len(deltas) == 1  # the same bytes for all forty
        assert dcz_with_zstd_cli(bodies[deltas.pop()], V1) == big
        # One encode served all forty.
        metrics = server.get("/metrics", admin=True)[2].decode()
        count = re.search(r'^dcserve_compression_duration_seconds_count\{(?=[^}]*coding="dcz")(?=[^}]*level="19")[^}]*\} (\S+)$',
                          metrics, re.M)
        assert count and float(count.group(1)) == 1, metrics
