"""A hostile Streamable HTTP server for the remote transports' bounds (issue 21).

Stdlib only (asyncio streams), on 127.0.0.1 with a free port. It answers ``initialize``,
``tools/list`` (``echo``, and ``hang``, never answered), ``tools/call`` and ``ping`` with JSON, notifications
and responses with 202, and counts what a hostile server would want to know: the
connections open at once (``open``, ``peak``), the GET streams opened (``gets``, with their
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

SSE_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
ECHO = {"name": "echo", "inputSchema": {"type": "object"}}
HANG = {"name": "hang", "inputSchema": {"type": "object"}}


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def sse_event(msg: Any, event_id: str | None = None, retry: int | None = None) -> bytes:
    out = b""
    if event_id is not None:
        out += b"id: " + event_id.encode() + b"\n"
    if retry is not None:
        out += b"retry: %d\n" % retry
    return chunk(out + b"data: " + json.dumps(msg).encode() + b"\n\n")


def response(status: int, body: bytes = b"", extra: str = "") -> bytes:
    reason = {200: "OK", 202: "Accepted", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}[status]
    ctype = "Content-Type: application/json\r\n" if body else ""
    return f"HTTP/1.1 {status} {reason}\r\n{ctype}{extra}Content-Length: {len(body)}\r\n\r\n".encode() + body


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
        self.open = 0
        self.peak = 0
        self.gets = 0
        self.get_times: list[float] = []
        self.answers = 0
        self.posts: list[Any] = []
        self.sessions: set[str] = set()
        self._ids = itertools.count(1)
        self._never = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._server: asyncio.Server | None = None
        self.port = 0

    async def __aenter__(self) -> HostileServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def restart(self) -> None:
        """Forget every session (a server restarted behind the same URL)."""
        self.sessions.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.open += 1
        self.peak = max(self.peak, self.open)
        try:
            while True:
                raw = await reader.readuntil(b"\r\n\r\n")
                lines = raw.decode("latin-1").split("\r\n")
                method = lines[0].split(" ", 1)[0]
                headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:] if x)}
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                if method == "GET":
                    self.gets += 1
                    self.get_times.append(asyncio.get_running_loop().time())
                    if self.on_get is None:
                        writer.write(response(405))
                    elif not await self.on_get(self, writer, self.gets):
                        return
                elif method == "DELETE":
                    writer.write(response(200))
                elif not await self._post(json.loads(body), headers.get("mcp-session-id"), writer):
                    return
                await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, asyncio.CancelledError):
            return
        finally:
            self.open -= 1
            self._tasks.discard(task)
            writer.close()

    async def _post(self, msg: Any, sid: str | None, writer: asyncio.StreamWriter) -> bool:
        self.posts.append(msg)
        if msg.get("method") == "initialize":
            sid = f"s{next(self._ids)}"
            if self.keep_sessions:
                self.sessions.add(sid)
            result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "hostile", "version": "1"}}
            writer.write(response(200, json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode(),
                                  f"Mcp-Session-Id: {sid}\r\n"))
            return True
        if sid not in self.sessions:
            error = {"code": -32000, "message": "Bad Request: No valid session ID provided"}
            writer.write(response(self.stale_status, json.dumps({"jsonrpc": "2.0", "error": error, "id": None}).encode()))
            return True
        if "method" not in msg:
            self.answers += 1
            if not self.read_answers:
                await self._never.wait()  # the answer is never taken: the connection stays busy
            writer.write(response(202))
            return True
        if "id" not in msg:
            writer.write(response(202))
            return True
        if (msg["method"] == "tools/call" and msg["params"]["name"] == "hang") or (
                msg["method"] == "ping" and not self.answer_pings):
            await self._never.wait()  # never answered
        result: Any = {}
        if msg["method"] == "tools/list":
            result = {"tools": [ECHO, HANG]}
        elif msg["method"] == "tools/call":
            result = {"content": [{"type": "text", "text": json.dumps(msg["params"].get("arguments", {}))}]}
        writer.write(response(200, json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()))
        return True


async def hold_open(writer: asyncio.StreamWriter) -> bool:
    """Keep a GET stream open until the server closes."""
    await asyncio.Event().wait()
    return False


def ping(n: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": f"p{n}", "method": "ping"}
