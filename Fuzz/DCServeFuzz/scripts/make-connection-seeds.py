"""Writes the seed scripts of the `connection` fuzz mode into Fuzz/DCServeFuzz/corpus/connection (the
format is described at the top of Sources/dcserve-fuzz/ConnectionFuzz.swift). Run with any python3:
python3 Fuzz/DCServeFuzz/scripts/make-connection-seeds.py"""
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "corpus", "connection")
METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS"]
MODES = "fhsbliux"


def request(method="GET", mode="f", size=2, body=0, chunked=False, close=False, expect=False, http10=False, upgrade=False):
    a = next(a for a in range(256) if a % 6 == METHODS.index(method) and (a >> 3) % 8 == MODES.index(mode)
             and ((a & 0xC0) == 0xC0) == http10)
    b = size  # size selector (b % 8); also the chunk sizes and query
    c = [0, 1, 5, 100, 1000, 20000].index(body) | (0x10 if chunked else 0) | (0x20 if close else 0) \
        | (0x40 if expect else 0) | (0x80 if upgrade else 0)
    return bytes([0, a, b, c])


def deliver(n="all"):
    return bytes([4, [1, 2, 3, 7, 16, 64, 512, "all"].index(n)])


def window(k):
    return bytes([8, [1, 10, 100, 5000, 100_000, "all"].index(k)])


def garbage(data):
    return bytes([3, len(data)]) + data


HALF_CLOSE, RESET = bytes([9]), bytes([10])


def stream_write(size=100, pick=0):
    return bytes([11, pick, [1, 10, 100, 5000, 70_000].index(size)])


def stream_end(abort=False, wait=True):
    return bytes([13, 0, (3 if abort else 0) | (0 if wait else 4)])


def body_read(): return bytes([14, 0])
def body_answer(): return bytes([15, 0])
def late(twice=False): return bytes([16, 0x80 if twice else 0])
def interim(): return bytes([17, 0])
def deadline(seconds): return bytes([18, [1, 11, 31, 61, 101, 301, 601, 7200].index(seconds)])
def shutdown(force=False): return bytes([19, 7 if force else 0])


def config(streams_bodies=False, sendfile=True, chunk=16384, small_watermark=False, three_requests=False,
           small_limits=False, small_linger=False, per_write="all", first_window="all"):
    flags = (1 if streams_bodies else 0) | (2 if sendfile else 0) | ([16, 64, 1024, 16384].index(chunk) << 2) \
        | (0x10 if small_watermark else 0) | (0x20 if three_requests else 0) | (0x40 if small_limits else 0) \
        | (0x80 if small_linger else 0)
    return bytes([flags, ["all", 1, 7, 100, 4096].index(per_write), ["all", 0, 10, 1000, 70_000].index(first_window)])


SEEDS = {
    "pipelined": config() + request(mode="f", size=4) + request("POST", "x", body=5) + request(mode="h", size=6)
    + request(mode="l", size=3) + request("HEAD", "f", size=5) + deliver(7) + deliver(64) + deliver() + late(),
    "pipelined-small-reads": config(chunk=16, per_write=7) + request(mode="f", size=5) + request("PUT", "x", body=1000, chunked=True)
    + request(mode="h", size=7) + deliver(3) + deliver(16) + deliver(512) + deliver() + window(5000),
    "stream": config(first_window=1000) + request(mode="s") + deliver() + stream_write(5000) + window(100)
    + stream_write(100) + window("all") + stream_write(70_000) + stream_end(),
    "stream-abort": config() + request(mode="s") + request(mode="f", size=3) + deliver() + stream_write(10) + stream_end(abort=True),
    "stream-after-reset": config(first_window=10) + request(mode="s") + deliver() + stream_write(5000) + RESET
    + stream_write(10) + stream_end(wait=False),
    "stream-http10": config() + request(mode="s", http10=True) + deliver() + stream_write(100) + stream_end(),
    "body-stream": config(streams_bodies=True) + request("PUT", "b", body=20000, expect=True) + deliver(512)
    + body_read() + deliver(512) + body_read() + body_read() + deliver() + body_read() + body_read() + body_answer(),
    "body-early-answer": config(streams_bodies=True, chunk=64) + request("POST", "b", body=20000, chunked=True)
    + request(mode="f") + deliver(512) + body_read() + body_answer() + deliver(),
    "body-buffered": config() + request("POST", "b", body=1000) + deliver() + body_answer(),
    "upgrade": config() + request(mode="u", size=0) + garbage(b"tunnel bytes") + deliver(),
    "upgrade-refused": config() + request(mode="u", size=0x80 | 1, http10=True) + request(mode="f") + deliver(),
    "double-respond": config() + request(mode="l") + request(mode="l") + deliver() + late(twice=True) + late(),
    "late-after-close": config() + request(mode="l") + deliver() + RESET + late(twice=True),
    "interim": config() + request(mode="i", size=2) + deliver() + interim() + late() + interim(),
    "garbage": config() + request(mode="f") + garbage(b"\x00GARBAGE / HTTP/9\r\n\r\n") + deliver() + window("all"),
    "header-deadline": config() + garbage(b"GET / HTTP/1.1\r\nHo") + deliver() + deadline(11) + deadline(101),
    "idle-deadline": config() + request() + deliver() + deadline(601),
    "write-deadline": config(first_window=0) + request(mode="f", size=6) + deliver() + deadline(301),
    "body-deadline": config(streams_bodies=True) + request("PUT", "b", body=1000) + deliver(64) + body_read() + deadline(301),
    "shutdown-mid-stream": config() + request(mode="s") + request(mode="f") + deliver() + shutdown() + stream_write(10) + stream_end(),
    "force-close": config() + request(mode="l") + deliver() + shutdown(force=True) + late(),
    "limits": config(small_limits=True, three_requests=True, small_linger=True) + request("POST", "x", body=20000)
    + request() + request() + request() + deliver() + deadline(101),
    "backpressure": config(small_watermark=True, first_window=0, per_write=100) + request(mode="f", size=6) * 4
    + deliver() + window(5000) + window(100_000) + window("all"),
    "half-close": config() + request(mode="l") + deliver() + HALF_CLOSE + late(),
}

os.makedirs(OUT, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print(f"{len(SEEDS)} seeds in {OUT}")
