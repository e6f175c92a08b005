"""Opens N keep-alive connections to 127.0.0.1:PORT, makes one request on each, keeps them idle, and
prints the RSS (KiB) of the given server PIDs (summed) while they are all open."""
import socket
import sys
import time

port, count, pids = int(sys.argv[1]), int(sys.argv[2]), [int(p) for p in sys.argv[3].split(",")]


def rss_kib() -> int:
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total


socks = []
request = b"GET /1k.bin HTTP/1.1\r\nHost: bench\r\n\r\n"
deadline = time.monotonic() + 120
for i in range(count):
    if time.monotonic() > deadline:
        break
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(request)
    got = b""
    while b"\r\n\r\n" not in got or len(got) < got.index(b"\r\n\r\n") + 4 + 1024:
        chunk = s.recv(65536)
        if not chunk:
            raise SystemExit(f"connection {i} closed by server")
        got += chunk
    socks.append(s)
time.sleep(1)
# Every connection must still be open (the server did not drop idle ones).
alive = 0
for s in socks:
    s.setblocking(False)
    try:
        alive += 0 if s.recv(1) == b"" else 1
    except BlockingIOError:
        alive += 1
print(f"{len(socks)} {alive} {rss_kib()}")
for s in socks:
    s.close()
