"""Writes the seed inputs of the zstd-differential fuzz mode into Fuzz/DCServeFuzz/corpus/zstd-differential:
a 2-byte dictionary length, a raw-content dictionary, then frames from the zstd CLI (levels 1-22,
dictionary, no checksum, RLE, raw, empty, two frames, a skippable frame, 4-stream Huffman literals).
Run: python3 Fuzz/DCServeFuzz/scripts/make-zstd-differential-seeds.py"""
import os, random, subprocess, struct, sys, tempfile
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "corpus", "zstd-differential")
TMP = tempfile.mkdtemp()
os.makedirs(out, exist_ok=True)
random.seed(7)
words = ["alpha", "beta", "gamma", "delta", "user", "id", "name", "\"value\":", "{", "}", ",", "true", "null"]
def text(n):
    return " ".join(random.choice(words) for _ in range(n)).encode()
def zstd(data, args, dict_bytes=None):
    cmd = ["zstd", "-q", "-c"] + args
    if dict_bytes is not None:
        open(TMP + "/seed.dict", "wb").write(dict_bytes)
        cmd += ["-D", TMP + "/seed.dict"]
    return subprocess.run(cmd, input=data, capture_output=True, check=True).stdout
seeds = []
d = text(200)
for level in ["-1", "-3", "-9", "-19", "--ultra", "-22"][:5]:
    args = [level] if level != "--ultra" else ["--ultra", "-22"]
    body = d[:400] + text(60) + d[100:500]
    seeds.append((d, zstd(body, args, d)))
    seeds.append((b"", zstd(text(300), args)))
seeds.append((b"", zstd(text(200), ["-3", "--no-check"])))
seeds.append((b"", zstd(bytes(3000), ["-3"])))                      # RLE block
seeds.append((b"", zstd(os.urandom(1500), ["-3"])))                 # raw block
seeds.append((b"", zstd(b"", ["-3"])))                              # empty frame
seeds.append((b"", zstd(text(50), ["-1"]) + zstd(text(40), ["-5"])))   # two frames
seeds.append((b"", bytes.fromhex("502a4d180400000001020304") + zstd(text(30), ["-1"])))  # skippable + frame
seeds.append((d[:64], zstd(d[:64] + d[:64], ["-19"], d[:64])))
big = bytes(random.choice(b"abcdefghijklmnopqrstuvwxyz      ") for _ in range(3000))
seeds.append((b"", zstd(big, ["-19"])))                             # 4-stream Huffman literals
for i, (dic, frame) in enumerate(seeds):
    blob = struct.pack("<H", len(dic)) + dic + frame
    assert len(blob) <= 4096, (i, len(blob))
    open(os.path.join(out, "seed-%02d" % i), "wb").write(blob)
print(len(seeds), "seeds")
