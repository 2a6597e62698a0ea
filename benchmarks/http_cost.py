"""Instructions per ``tools/call`` over Streamable HTTP: mcphost against the floor, counted.

The HTTP twin of ``call_cost.py``: wall-clock ratios on a shared machine move by a tenth
from one run to the next, so this counts what the client executes, the same on every run.
Each client runs under ``valgrind --tool=callgrind`` twice (``--calls`` and three times as
many); the difference of the two totals over the difference of the call counts is one call.

The server is ``http_echo_server.py``'s protocol served in the client's own process on
127.0.0.1 for the handshake and the warm-up (so that every connection a client wants is
open); then every client connection's socket transport is replaced by a stub that answers
each request (one ``Content-Length`` JSON response, a fixed ``text`` result) in the next
loop turn, all the answers of a turn delivered in one chunk per connection. No system call,
no server, no other process in what is counted; the collector is off.

The floor is ``http_floor.AsyncFloor``: one ``asyncio.Protocol`` per connection, the
request head built once per connection, the answer framed with ``bytes.find`` and decoded
with mcphost's codec, handed to the caller through a future (the shape of an async client
with nothing in it). mcphost runs with its defaults (a pool of 8 connections, validation,
timeouts, metrics); ``--max-connections 50`` gives its pool one connection per caller as
the floor has. Run from the repository root, with valgrind on PATH::

    python benchmarks/http_cost.py [--case sequential|concurrent] [--calls 1000]
                                   [--max-connections N]

``concurrent`` is 50 callers each awaiting its share (``bench_http.py``'s ``concurrent
x50``). It prints one line per client and the ratio. Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import _benchutil

_benchutil.ensure_repo_on_path()

HOST = "127.0.0.1"
WIDTH = 50
_WARM = 400
_ID_AT = len(b'{"jsonrpc":"2.0","id":')
_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"


class _Stub:
    """The socket transport of one client connection, replaced: every request written is
    answered in the next loop turn (the answers of a turn in one chunk)."""

    def __init__(self, protocol: Any, server: _Server) -> None:
        self.protocol = protocol
        self.server = server
        self.out: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        # One whole request per write (both clients write a request in one piece).
        body = data[data.index(b"\r\n\r\n") + 4:]
        rid = body[_ID_AT:body.index(b",", _ID_AT)]
        answer = b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}' % rid
        if not self.out:
            self.server.ready.append(self)
        self.out.append(_HEAD % len(answer) + answer)
        self.server.schedule()

    def is_closing(self) -> bool:
        return self.closed

    def get_write_buffer_size(self) -> int:
        return 0

    def close(self) -> None:
        # The pool closes what stays idle (``idle_timeout``, 30 s: a run under valgrind
        # lasts longer): the connection is dropped, the stub has nothing to release.
        self.closed = True

    def abort(self) -> None:
        raise RuntimeError("a stubbed connection was aborted")


class _Server:
    """Delivers what the stubs have to say, once per loop turn."""

    def __init__(self) -> None:
        self.ready: list[_Stub] = []
        self.scheduled = False
        self.loop = asyncio.get_running_loop()

    def schedule(self) -> None:
        if not self.scheduled:
            self.scheduled = True
            self.loop.call_soon(self.flush)

    def flush(self) -> None:
        self.scheduled = False
        ready, self.ready = self.ready, []
        for stub in ready:
            out = stub.out
            stub.out = []
            stub.protocol.data_received(b"".join(out) if len(out) > 1 else out[0])


async def _serve() -> tuple[Any, int]:
    from http_echo_server import Connection, State

    state = State()
    server = await asyncio.get_running_loop().create_server(lambda: Connection(state), HOST, 0)
    return state, server.sockets[0].getsockname()[1]


async def _client(impl: str, port: int, max_connections: int | None) -> tuple[Any, list[Any], Any]:
    """The call, its items and a function stubbing the client's connections."""
    from http_floor import AsyncFloor, bodies, handshake, run_workers

    if impl == "floor":
        sid = await asyncio.get_running_loop().run_in_executor(None, handshake, HOST, port)
        floor = AsyncFloor(HOST, port, sid, WIDTH)
        await floor.start()
        await run_workers(floor.call, bodies(WIDTH), WIDTH)  # every connection used once

        def stub_floor(server: _Server) -> None:
            for conn in floor.idle:
                conn.transport = _Stub(conn, server)

        return floor.call, bodies(3 * 3000 + _WARM, start_id=1000), stub_floor
    from mcphost import MCPHost

    factory = None
    if max_connections is not None:
        from mcphost.transports.http import StreamableHttpTransport

        def factory(server_config: Any) -> StreamableHttpTransport:
            return StreamableHttpTransport(server_config.name, server_config.url or "",
                                           max_connections=max_connections)

    host = MCPHost({"mcpServers": {"e": {"type": "http", "url": f"http://{HOST}:{port}/mcp"}}},
                   transport_factory=factory)
    await host.initialize()
    call = functools.partial(host.call_tool, "e.echo")
    await run_workers(call, [{"i": i} for i in range(4 * WIDTH)], WIDTH)  # the pool grown
    transport = host.servers["e"].session.peer.transport

    def stub_host(server: _Server) -> None:
        for conn in transport.pool.idle:
            conn.transport = _Stub(conn, server)

    return call, [{"i": i} for i in range(3 * 3000 + _WARM)], stub_host


async def _run(impl: str, case: str, calls: int, max_connections: int | None) -> None:
    from http_floor import run_workers

    state, port = await _serve()
    call, items, stub = await _client(impl, port, max_connections)
    await asyncio.sleep(0.05)  # what the warm-up left (the closed GET stream...) settles
    stub(_Server())
    served = state.requests
    width = 1 if case == "sequential" else WIDTH
    await run_workers(call, items[:_WARM], width)
    gc.disable()
    await run_workers(call, items[_WARM:_WARM + calls], width)
    if state.requests != served:
        print(f"{state.requests - served} requests reached the server, not the stub", file=sys.stderr)
        os._exit(1)
    os._exit(0)  # what follows (shutdown) is not counted


def _count(impl: str, case: str, calls: int, max_connections: int | None) -> int:
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
            __file__, "--child", impl, "--case", case, "--calls", str(calls)]
    if max_connections is not None:
        argv += ["--max-connections", str(max_connections)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONHASHSEED": "0"})
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"callgrind printed no count:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", default="concurrent", choices=["concurrent", "sequential"])
    parser.add_argument("--calls", type=int, default=1000, help="at most 3000")
    parser.add_argument("--max-connections", type=int, default=None)
    parser.add_argument("--child", choices=["floor", "mcphost"], help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.calls > 3000:
        parser.error("--calls: at most 3000")
    if opts.child:
        asyncio.run(_run(opts.child, opts.case, opts.calls, opts.max_connections))
        return 0
    started = time.perf_counter()
    per_call = {}
    for impl in ("floor", "mcphost"):
        with ThreadPoolExecutor(2) as pool:  # the two counts side by side
            few, many = pool.map(functools.partial(_count, impl, opts.case, max_connections=opts.max_connections),
                                 (opts.calls, 3 * opts.calls))
        per_call[impl] = (many - few) / (2 * opts.calls)
        print(f"{impl:8s} {per_call[impl]:10,.0f} instructions per call", flush=True)
    pool_size = f", max_connections={opts.max_connections}" if opts.max_connections else ""
    print(f"ratio floor/mcphost {per_call['floor'] / per_call['mcphost']:.3f}; mcphost adds "
          f"{per_call['mcphost'] - per_call['floor']:,.0f} per call "
          f"({opts.case}{pool_size}; {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
