"""The *floor*: the least a Python asyncio MCP client can do per ``tools/call``.

One child process over pipes, one reader task splitting lines out of
``stdout.read(1 << 18)``, a dict of futures keyed by request id, and the same JSON codec
mcphost uses (``mcphost.protocol.jsonrpc.dumps``/``loads``: orjson when installed). No validation,
no timeouts, no metrics, no error handling beyond what keeps the benchmark honest. What
mcphost spends above this is its own overhead; the benchmarks report mcphost / floor.

With ``progress=True`` each call also asks for progress (``_meta.progressToken``) and the
reader dispatches each ``notifications/progress`` to a no-op callback by token lookup, as a
real client must.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any

from mcphost.protocol.jsonrpc import dumps, loads

PROTOCOL_VERSION = "2025-06-18"


def _noop(params: dict[str, Any]) -> None:
    return None


class FloorClient:
    """A bare JSON-RPC-over-stdio client for one server process."""

    def __init__(self, argv: list[str], *, progress: bool = False) -> None:
        self.argv = argv
        self.progress = progress
        self._proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._progress_cbs: dict[int, Callable[[dict[str, Any]], Any]] = {}
        self._next_id = 0
        self._write: Callable[[bytes], None] | None = None

    async def start(self) -> None:
        self._proc = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=1 << 20,
        )
        assert self._proc.stdin is not None
        self._write = self._proc.stdin.write
        self._reader = asyncio.get_running_loop().create_task(self._read_loop())
        await self._request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "floor", "version": "0"},
            },
        )
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, msg: dict[str, Any]) -> None:
        assert self._write is not None
        self._write(dumps(msg) + b"\n")

    def _request(self, method: str, params: dict[str, Any]) -> asyncio.Future[Any]:
        self._next_id += 1
        rid = self._next_id
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return fut

    async def call(self, args: dict[str, Any], name: str = "echo") -> Any:
        """Call a tool and return its result (no checks of any kind)."""
        if not self.progress:
            return await self._request("tools/call", {"name": name, "arguments": args})
        self._next_id += 1
        rid = self._next_id
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
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

    async def _read_loop(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        read = self._proc.stdout.read
        pending = self._pending
        cbs = self._progress_cbs
        buf = b""
        while True:
            chunk = await read(1 << 18)
            if not chunk:
                break
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
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
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(ConnectionError("server closed"))
        pending.clear()

    async def close(self) -> None:
        proc = self._proc
        if proc is None:
            return
        self._proc = None
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except asyncio.TimeoutError:  # pragma: no cover
            proc.kill()
            await proc.wait()
        if self._reader is not None:
            await self._reader

    async def __aenter__(self) -> FloorClient:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def server_argv(server_script: str, progress: bool = False) -> list[str]:
    """The argv starting the echo server with this interpreter."""
    return [sys.executable, server_script, *(["--progress"] if progress else [])]
