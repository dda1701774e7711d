"""Latency-adding TCP proxy on loopback, for benchmarks/collect_s3.py.

Every client->server chunk (with keep-alive, one request) is forwarded
`--delay-ms` after it arrived; chunks are queued with their arrival time, so
pipelined chunks are not serialized and a connection's order is kept.
server->client passes at once, with flow control both ways. New TCP
connections are not delayed, which favors clients that open many (s5cmd).

    python benchmarks/latency_proxy.py --target 127.0.0.1:8333 --delay-ms 20

Prints its port on the first line of stdout, serves until SIGTERM, then
prints its counters as JSON on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import signal
import sys

STATS = {"connections": 0, "chunks_up": 0}


class Upstream(asyncio.Protocol):
    def __init__(self, down: Downstream):
        self.down = down
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport
        self.down.upstream_ready(self)

    def data_received(self, data):
        self.down.transport.write(data)

    def connection_lost(self, exc):
        self.down.transport.close()

    def pause_writing(self):
        self.down.transport.pause_reading()

    def resume_writing(self):
        self.down.transport.resume_reading()


class Downstream(asyncio.Protocol):
    def __init__(self, target: tuple[str, int], delay: float):
        STATS["connections"] += 1
        self.target, self.delay = target, delay
        self.loop = asyncio.get_running_loop()
        self.queue: collections.deque = collections.deque()
        self.timer = None
        self.up: Upstream | None = None
        self.closing = False

    def connection_made(self, transport):
        self.transport = transport
        self.loop.create_task(self._connect())

    async def _connect(self):
        try:
            await self.loop.create_connection(lambda: Upstream(self), *self.target)
        except OSError:
            self.transport.close()

    def upstream_ready(self, up):
        self.up = up
        self._flush()

    def data_received(self, data):
        STATS["chunks_up"] += 1
        self.queue.append((self.loop.time() + self.delay, data))
        if self.timer is None and self.up is not None:
            self.timer = self.loop.call_at(self.queue[0][0], self._flush)

    def _flush(self):
        self.timer = None
        now = self.loop.time()
        while self.queue and self.queue[0][0] <= now + 0.0005:
            self.up.transport.write(self.queue.popleft()[1])
        if self.queue:
            self.timer = self.loop.call_at(self.queue[0][0], self._flush)
        elif self.closing:
            if self.up.transport.can_write_eof():
                self.up.transport.write_eof()
            else:
                self.up.transport.close()

    def eof_received(self):
        self.closing = True
        if not self.queue and self.up is not None:
            self._flush()
        return True

    def connection_lost(self, exc):
        if self.up is not None and not self.queue:
            self.up.transport.close()

    def pause_writing(self):
        if self.up:
            self.up.transport.pause_reading()

    def resume_writing(self):
        if self.up:
            self.up.transport.resume_reading()


async def serve(target: tuple[str, int], delay: float) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Downstream(target, delay), "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()
    print(json.dumps(STATS), file=sys.stderr, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", required=True, help="host:port, loopback only")
    ap.add_argument("--delay-ms", type=float, default=20.0)
    a = ap.parse_args()
    host, port = a.target.rsplit(":", 1)
    if not host.startswith("127."):
        sys.exit(f"--target {a.target!r}: this proxy only forwards to loopback (127.x.x.x)")
    asyncio.run(serve((host, int(port)), a.delay_ms / 1000))


if __name__ == "__main__":
    main()
