"""A small sticky front for the benchmarks: one port, N backends, routed by ``Mcp-Session-Id``.

What nginx's ``hash $http_mcp_session_id`` or HAProxy's ``balance hdr(Mcp-Session-Id)`` do in
a deployment (docs/serve.md), in one stdlib asyncio process, so that the benchmark needs
nothing installed:

- a connection whose first request carries an ``Mcp-Session-Id`` goes to the backend that
  answered that session's ``initialize``;
- a connection without one (an ``initialize``) goes to the next backend, round-robin;
- the backend's answers are scanned for the ``Mcp-Session-Id`` header it gives a new
  session, which is how the front learns where each session lives.

Routing is per connection, not per request: an MCP client keeps a session's requests on the
connections it opened for that session, so the first request of a connection names the
session of all the others. The bytes are relayed as they are (keep-alive, chunked SSE).

Run: ``python benchmarks/sticky_front.py --backend 127.0.0.1:PORT [--backend ...]``; it
prints ``PORT <n>`` once listening and exits when its stdin closes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import sys

_HEADER = b"\r\nmcp-session-id:"


class Front:
    def __init__(self, backends: list[tuple[str, int]]) -> None:
        self.backends = backends
        self.turn = itertools.cycle(range(len(backends)))
        self.sessions: dict[bytes, int] = {}  # session id -> backend index
        self.tasks: set[asyncio.Task[None]] = set()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream: asyncio.StreamWriter | None = None
        task = asyncio.current_task()
        assert task is not None
        self.tasks.add(task)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            sid = _session_of(head)
            index = self.sessions.get(sid) if sid else None
            if index is None:
                index = next(self.turn)
            host, port = self.backends[index]
            up_reader, upstream = await asyncio.open_connection(host, port)
            upstream.write(head)
            await asyncio.gather(_pipe(reader, upstream), self._answers(up_reader, writer, index))
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, asyncio.CancelledError):
            # (cancelled: the front is stopping; ended quietly, not reported by asyncio as an error)
            pass
        finally:
            self.tasks.discard(task)
            for end in (writer, upstream):
                if end is not None:
                    end.close()

    async def _answers(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, index: int) -> None:
        tail = b""
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            seen = (tail + data).lower()
            at = seen.find(_HEADER)
            while at >= 0:
                end = seen.find(b"\r\n", at + len(_HEADER))
                if end < 0:
                    break
                sid = bytes(seen[at + len(_HEADER):end]).strip()
                if sid:
                    self.sessions[sid] = index
                at = seen.find(_HEADER, end)
            tail = seen[-128:]
            await writer.drain()
        with contextlib.suppress(OSError):
            writer.write_eof()


def _session_of(head: bytes) -> bytes | None:
    lowered = head.lower()
    at = lowered.find(_HEADER)
    if at < 0:
        return None
    end = lowered.find(b"\r\n", at + len(_HEADER))
    return lowered[at + len(_HEADER):end].strip() or None


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while True:
        data = await reader.read(65536)
        if not data:
            break
        writer.write(data)
        await writer.drain()
    with contextlib.suppress(OSError):
        writer.write_eof()


async def main(backends: list[tuple[str, int]]) -> None:
    front = Front(backends)
    server = await asyncio.start_server(front.serve, "127.0.0.1", 0, limit=1 << 20)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # until the benchmark closes our stdin
    server.close()
    for task in list(front.tasks):
        task.cancel()
    await asyncio.gather(*front.tasks, return_exceptions=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", action="append", required=True, help="HOST:PORT, repeatable")
    args = parser.parse_args()
    pairs = [(b.rsplit(":", 1)[0], int(b.rsplit(":", 1)[1])) for b in args.backend]
    asyncio.run(main(pairs))
