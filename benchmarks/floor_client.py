"""The *floor*: the best plain asyncio MCP client one can write for ``tools/call``.

What it does, and nothing more:

- the child's pipes through ``loop.subprocess_exec`` and a ``SubprocessProtocol``: no
  reader task, no stream buffer; stdout chunks are split on ``\\n`` and dispatched in the
  read callback itself, so a response completes its future in the loop turn that read it;
- writes gathered per loop turn: requests made in one turn go out in one ``write`` (one
  system call), and a request made alone goes out at once; a long turn writes every 8 KiB,
  so the server works on the first requests while the client makes the rest (without it
  mcphost, which does so, beat this floor by a fifth on one server);
- a dict of futures keyed by request id;
- the same JSON codec as mcphost (``mcphost._json``: orjson when installed);
- the handshake (``initialize``, ``notifications/initialized``) and, for the start-up
  benchmark, ``tools/list``.

No validation, no timeouts, no metrics, no error handling beyond what keeps the benchmark
honest: every response is matched by id and an error answer raises. What mcphost spends
above this is its own overhead; the benchmarks report mcphost / floor.

With ``progress=True`` each call also asks for progress (``_meta.progressToken``) and each
``notifications/progress`` is dispatched by token to a no-op callback, as a real client
must.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from mcphost._json import dumps, loads

PROTOCOL_VERSION = "2025-06-18"
#: A turn's writes go out at once past this many bytes (what mcphost's stdio transport does).
EAGER_BYTES = 8192


def _noop(params: dict[str, Any]) -> None:
    return None


class _Pipes(asyncio.SubprocessProtocol):
    def __init__(self, client: FloorClient) -> None:
        self.client = client

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if fd == 1:
            self.client._feed(data)  # type: ignore[arg-type]

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.client._eof()


class FloorClient:
    """A bare JSON-RPC-over-stdio client for one server process."""

    def __init__(self, argv: list[str], *, progress: bool = False) -> None:
        self.argv = argv
        self.progress = progress
        self._transport: asyncio.SubprocessTransport | None = None
        self._stdin: Any = None
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._progress_cbs: dict[int, Callable[[dict[str, Any]], Any]] = {}
        self._next_id = 0
        self._buf = b""
        self._out: list[bytes] = []
        self._out_bytes = 0
        self._flush_scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = asyncio.Event()

    async def start(self) -> None:
        loop = self._loop = asyncio.get_running_loop()
        self._transport, _ = await loop.subprocess_exec(
            lambda: _Pipes(self), *self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None
        )
        self._stdin = self._transport.get_pipe_transport(0)
        await self._request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "floor", "version": "0"},
            },
        )
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def list_tools(self) -> Any:
        return await self._request("tools/list", {})

    # -- writing: one write per loop turn ----------------------------------------------------

    def _send(self, msg: dict[str, Any]) -> None:
        data = dumps(msg)
        self._out.append(data)
        self._out_bytes += len(data) + 1
        if len(self._pending) <= 1 or self._out_bytes >= EAGER_BYTES:
            # Alone in flight: no reason to wait for the end of the turn. A long turn's
            # requests go out every 8 KiB, so the server starts on them while more are made.
            self._flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            assert self._loop is not None
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        out = self._out
        if out:
            out.append(b"")
            self._stdin.write(b"\n".join(out))
            out.clear()
            self._out_bytes = 0

    def _request(self, method: str, params: dict[str, Any]) -> asyncio.Future[Any]:
        self._next_id += 1
        rid = self._next_id
        assert self._loop is not None
        fut: asyncio.Future[Any] = self._loop.create_future()
        self._pending[rid] = fut
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return fut

    async def call(self, args: dict[str, Any], name: str = "echo") -> Any:
        """Call a tool and return its result (no checks of any kind)."""
        if not self.progress:
            return await self._request("tools/call", {"name": name, "arguments": args})
        self._next_id += 1
        rid = self._next_id
        assert self._loop is not None
        fut: asyncio.Future[Any] = self._loop.create_future()
        self._pending[rid] = fut
        self._progress_cbs[rid] = _noop
        self._send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "method": "tools/call",
                "params": {"name": name, "arguments": args, "_meta": {"progressToken": rid}},
            }
        )
        try:
            return await fut
        finally:
            del self._progress_cbs[rid]

    # -- reading: in the read callback ---------------------------------------------------------

    def _feed(self, chunk: bytes) -> None:
        buf = self._buf + chunk if self._buf else chunk
        *lines, self._buf = buf.split(b"\n")
        pending = self._pending
        cbs = self._progress_cbs
        for line in lines:
            if not line:
                continue
            msg = loads(line)
            rid = msg.get("id")
            if rid is None:
                if msg.get("method") == "notifications/progress":
                    params = msg["params"]
                    cb = cbs.get(params["progressToken"])
                    if cb is not None:
                        cb(params)
                continue
            fut = pending.pop(rid)
            if not fut.done():
                if "result" in msg:
                    fut.set_result(msg["result"])
                else:
                    fut.set_exception(RuntimeError(str(msg.get("error"))))

    def _eof(self) -> None:
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(ConnectionError("server closed"))
        self._pending.clear()
        self._closed.set()

    async def close(self) -> None:
        transport = self._transport
        if transport is None:
            return
        self._transport = None
        self._flush()
        self._stdin.close()
        try:
            await asyncio.wait_for(self._closed.wait(), 5)
        except asyncio.TimeoutError:  # pragma: no cover
            transport.kill()
        for _ in range(1000):  # the exit status, so the loop does not outlive the child
            if transport.get_returncode() is not None:
                break
            await asyncio.sleep(0.005)
        transport.close()

    async def __aenter__(self) -> FloorClient:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def server_argv(server_script: str, progress: bool = False) -> list[str]:
    """The argv starting the echo server with this interpreter."""
    return [sys.executable, server_script, *(["--progress"] if progress else [])]
