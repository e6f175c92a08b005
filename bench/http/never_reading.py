#!/usr/bin/env python3
"""RSS of dcserve with N clients that request one large file and never read.

Starts `dcserve serve --root R --dictionaries '/big/*'` (so the file is inside a dictionary rule's
scope and served from memory), fetches it once to warm the caches, then opens N connections that
each send one GET and never read. Prints the server's RSS before and after (VmRSS, after the
server had SETTLE seconds to fill the sockets). Usage: never_reading.py DCSERVE_BIN [N] [MB]
Environment passes through (e.g. DCSERVE_COMPRESSION_VARIANT_CACHE_BYTES, so the file fits the
resource cache and every connection is handed the same bytes).
Bounded: every socket has a timeout, the server is stopped by PID."""
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

binary = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 100
mb = int(sys.argv[3]) if len(sys.argv) > 3 else 40
SETTLE = int(os.environ.get("SETTLE", "5"))

work = tempfile.mkdtemp(prefix="never-reading-")
os.makedirs(f"{work}/www/big")
with open(f"{work}/www/big/data.bin", "wb") as f:
    block = os.urandom(1 << 20)
    for i in range(mb):
        f.write(block[:-8] + i.to_bytes(8, "big"))
log = open(f"{work}/log.txt", "wb")
proc = subprocess.Popen([binary, "serve", "--root", f"{work}/www", "--dictionaries", "/big/*", "--store", f"{work}/store",
                         "--port", "0", "--no-access-log"], stdout=log, stderr=subprocess.STDOUT)


def rss_kb():
    for line in open(f"/proc/{proc.pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


try:
    port = None
    for _ in range(200):
        m = re.search(rb"listening on http://127\.0\.0\.1:(\d+)", open(f"{work}/log.txt", "rb").read())
        if m:
            port = int(m.group(1))
            break
        time.sleep(0.05)
    assert port, open(f"{work}/log.txt").read()
    url = f"http://127.0.0.1:{port}/big/data.bin"
    for _ in range(2):
        with urllib.request.urlopen(urllib.request.Request(url, headers={"Accept-Encoding": "identity"}), timeout=60) as r:
            headers = dict(r.headers)
            size = len(r.read())
    time.sleep(1)
    before = rss_kb()
    sockets = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(b"GET /big/data.bin HTTP/1.1\r\nHost: t\r\nAccept-Encoding: identity\r\n\r\n")
        sockets.append(s)
    time.sleep(SETTLE)
    after = rss_kb()
    print(f"{n} never-reading clients of a {size / 1e6:.1f} MB file (Use-As-Dictionary: {headers.get('Use-As-Dictionary', '-')}): "
          f"RSS {before / 1024:.1f} MB before, {after / 1024:.1f} MB with the clients connected "
          f"(+{(after - before) / 1024:.1f} MB, {(after - before) / n:.0f} KB per client)")
    for s in sockets:
        s.close()
finally:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    subprocess.run(["rm", "-rf", work])
