"""What every stdlib HTTP server of the tests shares: the listener, its teardown, a request
read, an answer written by hand.

The test servers (``auth_server.py``, ``remote_server.py``, ``fake_http.py``,
``hostile_http.py``, the forward proxy of ``transports/test_http_tls_proxy.py``) each serve
a connection with a coroutine of their own; a :class:`Listener` runs it on 127.0.0.1 with a
free port, in a task it holds, and closing the listener cancels every connection task and
waits for them, then (bounded) for the listening socket: no task or socket outlives the
test, whatever state its connections were in. A client that goes away, or a server that
closes, ends its connection quietly; the writer is always closed.

Answers are bytes written by hand (:func:`plain`, :func:`head`, :data:`SSE_HEAD`,
:func:`chunk`, :func:`event`), so that a server can also send what no HTTP library would.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

#: Serves one connection; returning (or raising a connection error) ends it.
Serve = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]

REASONS = {200: "OK", 201: "Created", 202: "Accepted", 302: "Found", 307: "Temporary Redirect",
           400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
           405: "Method Not Allowed", 500: "Internal Server Error", 503: "Service Unavailable"}


class Listener:
    """``serve`` on 127.0.0.1 (``await listener.start()``, then ``await listener.close()``)."""

    def __init__(self, serve: Serve, *, ssl_context: ssl.SSLContext | None = None) -> None:
        self._serve = serve
        self._ssl = ssl_context
        self.port = 0
        #: Connections accepted, open now, and the most open at once.
        self.accepted = 0
        self.open = 0
        self.peak = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._server: asyncio.Server | None = None

    async def start(self, port: int = 0) -> int:
        """Listen (port 0: a free one); the port."""
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", port, ssl=self._ssl)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def close(self) -> None:
        """Stop listening, cancel every connection and wait for them (idempotent)."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if server is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(server.wait_closed(), 5)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.accepted += 1
        self.open += 1
        self.peak = max(self.peak, self.open)
        try:
            await self._serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.CancelledError):
            pass  # the client went, or the listener closes (its close() waits for this task)
        finally:
            self.open -= 1
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):  # bounded: a client that reads nothing holds unsent bytes
                await asyncio.wait_for(writer.wait_closed(), 5)


# -- requests -------------------------------------------------------------------------------------


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # names lowercased
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def form(self) -> dict[str, str]:
        return dict(urllib.parse.parse_qsl(self.body.decode()))


def parse_head(raw: bytes) -> tuple[list[str], dict[str, str]]:
    """A head's lines (the request line first) and its headers, their names lowercased."""
    lines = raw.decode("latin-1").split("\r\n")
    return lines, {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:] if x)}


async def read_request(reader: asyncio.StreamReader) -> Request:
    """The next request of a connection, its body read by its Content-Length.

    Raises:
        asyncio.IncompleteReadError, ConnectionError: the client went (the listener ends
            the connection quietly).
    """
    lines, headers = parse_head(await reader.readuntil(b"\r\n\r\n"))
    method, target, _ = lines[0].split(" ", 2)
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    parts = urllib.parse.urlsplit(target)
    return Request(method, parts.path, dict(urllib.parse.parse_qsl(parts.query)), headers, body)


# -- answers --------------------------------------------------------------------------------------


def head(status: int, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}"] + [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def plain(status: int, body: bytes = b"", ctype: str = "text/plain", extra: list[tuple[str, str]] | None = None) -> bytes:
    """A whole answer with a Content-Length."""
    headers = [("Content-Type", ctype), ("Content-Length", str(len(body)))] + (extra or [])
    return head(status, headers) + body


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def event(data: str, event_id: str | None = None, name: str | None = None, retry: int | None = None) -> bytes:
    """One SSE event (not yet in a chunk)."""
    out = ""
    if name:
        out += f"event: {name}\n"
    if event_id is not None:
        out += f"id: {event_id}\n"
    if retry is not None:
        out += f"retry: {retry}\n"
    out += "".join(f"data: {line}\n" for line in data.split("\n"))
    return (out + "\n").encode()


#: The head of an SSE answer, chunked: :func:`chunk` each event, ``b"0\r\n\r\n"`` ends it.
SSE_HEAD = head(200, [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"),
                      ("Transfer-Encoding", "chunked")])
