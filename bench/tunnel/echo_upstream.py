"""The bench's WebSocket upstream: answers every upgrade request with `101 Switching Protocols`
(a correct Sec-WebSocket-Accept), then echoes the connection's bytes as they come. It does not parse
frames: the proxies in front of it carry bytes after the 101 and never look inside either, so a
byte echo costs the upstream the least and measures the fronts. One asyncio loop, one process.

    python echo_upstream.py PORT
"""
from __future__ import annotations

import asyncio
import base64
import hashlib
import sys

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class Echo(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.head = b""
        self.open = False

    def data_received(self, data: bytes) -> None:
        if self.open:
            self.transport.write(data)
            return
        self.head += data
        end = self.head.find(b"\r\n\r\n")
        if end < 0:
            return
        head, rest = self.head[:end], self.head[end + 4:]
        key = b""
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"sec-websocket-key":
                key = value.strip()
        accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
        self.transport.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                             b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n")
        self.open = True
        if rest:
            self.transport.write(rest)


async def main(port: int) -> None:
    server = await asyncio.get_running_loop().create_server(Echo, "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
