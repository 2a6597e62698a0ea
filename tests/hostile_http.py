"""A hostile Streamable HTTP server for the remote transports' bounds (issue 21).

Stdlib only (asyncio streams), on 127.0.0.1 with a free port. It answers ``initialize``,
``tools/list`` (``echo``, and ``hang``, never answered), ``tools/call`` and ``ping`` with JSON, notifications
and responses with 202, and counts what a hostile server would want to know: the
connections open now and at once (``open``, ``peak``), the GET streams opened (``gets``, with their
times). What it does wrong is given by its switches:

- ``read_answers=False``: a POST carrying a response (an answer to the server's own
  request) is never answered; its connection stays open until the server closes;
- ``on_get``: a coroutine ``(server, writer, number)`` that serves the standalone GET stream
  (write the SSE head, events, return ``True`` to keep the connection, ``False`` to close);
  without it, GET gets 405;
- ``answer_pings = False``: ``ping`` is never answered;
- ``stale_status``: how a request carrying a session id the server does not know is
  refused (404 by the spec; 400 the way server-everything does); ``restart()`` forgets the
  sessions; ``keep_sessions=False``: it forgets each session as soon as it gave it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Awaitable, Callable
from typing import Any

from http_listener import SSE_HEAD, Listener, chunk, event, plain, read_request

__all__ = ["SSE_HEAD", "HostileServer", "chunk", "hold_open", "ping", "sse_event"]

ECHO = {"name": "echo", "inputSchema": {"type": "object"}}
HANG = {"name": "hang", "inputSchema": {"type": "object"}}


def sse_event(msg: Any, event_id: str | None = None, retry: int | None = None) -> bytes:
    """``msg`` as one SSE event in a chunk."""
    return chunk(event(json.dumps(msg), event_id, retry=retry))


def answer(msg: Any, extra: list[tuple[str, str]] | None = None) -> bytes:
    """A 200 with ``msg`` as its JSON body."""
    return plain(200, json.dumps(msg).encode(), "application/json", extra)


GetHandler = Callable[["HostileServer", asyncio.StreamWriter, int], Awaitable[bool]]


class HostileServer:
    """``async with HostileServer(...) as server``: ``server.url`` is its MCP endpoint."""

    def __init__(self, *, read_answers: bool = True, on_get: GetHandler | None = None,
                 stale_status: int = 404, keep_sessions: bool = True) -> None:
        #: Answer ``ping`` (false: a server that stopped answering).
        self.answer_pings = True
        self.read_answers = read_answers
        self.on_get = on_get
        self.stale_status = stale_status
        self.keep_sessions = keep_sessions
        self.gets = 0
        self.get_times: list[float] = []
        self.answers = 0
        self.posts: list[Any] = []
        self.sessions: set[str] = set()
        self._ids = itertools.count(1)
        self._never = asyncio.Event()
        self._listener = Listener(self._serve)
        self.port = 0

    async def __aenter__(self) -> HostileServer:
        self.port = await self._listener.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._listener.close()

    @property
    def peak(self) -> int:
        """The most connections open at once."""
        return self._listener.peak

    @property
    def open(self) -> int:
        """The connections open now."""
        return self._listener.open

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def restart(self) -> None:
        """Forget every session (a server restarted behind the same URL)."""
        self.sessions.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            req = await read_request(reader)
            if req.method == "GET":
                self.gets += 1
                self.get_times.append(asyncio.get_running_loop().time())
                if self.on_get is None:
                    writer.write(plain(405))
                elif not await self.on_get(self, writer, self.gets):
                    return
            elif req.method == "DELETE":
                writer.write(plain(200))
            elif not await self._post(json.loads(req.body), req.headers.get("mcp-session-id"), writer):
                return
            await writer.drain()

    async def _post(self, msg: Any, sid: str | None, writer: asyncio.StreamWriter) -> bool:
        self.posts.append(msg)
        if msg.get("method") == "initialize":
            sid = f"s{next(self._ids)}"
            if self.keep_sessions:
                self.sessions.add(sid)
            result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "hostile", "version": "1"}}
            writer.write(answer({"jsonrpc": "2.0", "id": msg["id"], "result": result}, [("Mcp-Session-Id", sid)]))
            return True
        if sid not in self.sessions:
            error = {"code": -32000, "message": "Bad Request: No valid session ID provided"}
            writer.write(plain(self.stale_status, json.dumps({"jsonrpc": "2.0", "error": error, "id": None}).encode(),
                               "application/json"))
            return True
        if "method" not in msg:
            self.answers += 1
            if not self.read_answers:
                await self._never.wait()  # the answer is never taken: the connection stays busy
            writer.write(plain(202))
            return True
        if "id" not in msg:
            writer.write(plain(202))
            return True
        if (msg["method"] == "tools/call" and msg["params"]["name"] == "hang") or (
                msg["method"] == "ping" and not self.answer_pings):
            await self._never.wait()  # never answered
        result: Any = {}
        if msg["method"] == "tools/list":
            result = {"tools": [ECHO, HANG]}
        elif msg["method"] == "tools/call":
            result = {"content": [{"type": "text", "text": json.dumps(msg["params"].get("arguments", {}))}]}
        writer.write(answer({"jsonrpc": "2.0", "id": msg["id"], "result": result}))
        return True


async def hold_open(writer: asyncio.StreamWriter) -> bool:
    """Keep a GET stream open until the server closes."""
    await asyncio.Event().wait()
    return False


def ping(n: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": f"p{n}", "method": "ping"}
