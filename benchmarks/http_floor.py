"""The *floors* of the HTTP benchmark: the best plain stdlib clients for ``tools/call`` over
Streamable HTTP, to measure mcphost against (``bench_http.py``).

Every floor does the handshake once (``initialize`` and ``notifications/initialized``, see
:func:`handshake`), then sends each call as one ``POST`` on a kept-alive connection with
the session headers set, reads the ``Content-Length`` JSON answer, parses it with the same
codec as mcphost (``mcphost._json``: orjson when installed), checks its id and returns its
``result``. The request bodies are built before the clock starts (``bodies``); the
constant part of the request head is built once per connection. No validation, no
timeouts, no metrics, no SSE, no error handling beyond what keeps the benchmark honest (a
non-200 status or a wrong id raises).

The variants (the benchmark measures each and takes the fastest as the floor of a case):

- :class:`HttpClientFloor`: ``http.client.HTTPConnection`` (blocking), the textbook loop;
- :class:`SocketFloor`: a blocking socket, one ``sendall`` of the whole request, the
  response parsed from ``recv`` with ``bytes.find``: what ``http.client`` does minus its
  generic header machinery (``email.parser``) and minus its second ``send`` for the body;
- :class:`AsyncFloor`: asyncio, one ``asyncio.Protocol`` per connection (no streams, no
  reader task), responses parsed in ``data_received`` and handed to the awaiting caller
  through a future: the shape of an async client, such as mcphost, with nothing in it.

Concurrency: the blocking variants run one connection per thread
(:func:`run_threads`, a warm ``ThreadPoolExecutor``); :class:`AsyncFloor` keeps one
connection per call in flight.
"""

from __future__ import annotations

import asyncio
import http.client
import socket
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from mcphost._json import dumps, loads

PROTOCOL_VERSION = "2025-06-18"
PATH = "/mcp"

#: One call's input: its request id and its request body (built before timing).
Item = tuple[int, bytes]


def bodies(n: int, start_id: int = 1) -> list[Item]:
    """Pre-built ``tools/call`` bodies of ``echo`` with ``{"i": i}``, ids from ``start_id``."""
    out = []
    for i in range(n):
        rid = start_id + i
        body = dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"i": i}}})
        out.append((rid, body))
    return out


def handshake(host: str, port: int) -> str:
    """``initialize`` and ``notifications/initialized``; return the session id."""
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        init = dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "floor", "version": "0"}}})
        conn.request("POST", PATH, init, headers)
        response = conn.getresponse()
        response.read()
        sid = response.getheader("Mcp-Session-Id")
        if response.status != 200 or not sid:
            raise RuntimeError(f"initialize: HTTP {response.status}, session {sid!r}")
        headers["Mcp-Session-Id"] = sid
        headers["MCP-Protocol-Version"] = PROTOCOL_VERSION
        conn.request("POST", PATH, dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), headers)
        response = conn.getresponse()
        response.read()
        if response.status != 202:
            raise RuntimeError(f"notifications/initialized: HTTP {response.status}")
        return sid
    finally:
        conn.close()


def _head(host: str, port: int, sid: str) -> bytes:
    """The request head up to ``Content-Length``'s value (``%d``) and the blank line."""
    return (
        f"POST {PATH} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nMcp-Session-Id: {sid}\r\n"
        f"MCP-Protocol-Version: {PROTOCOL_VERSION}\r\n"
    ).encode("latin-1").replace(b"%", b"%%") + b"Content-Length: %d\r\n\r\n"


def _result(msg: Any, rid: int) -> Any:
    if msg.get("id") != rid or "result" not in msg:
        raise RuntimeError(f"bad answer to {rid}: {msg!r}"[:300])
    return msg["result"]


class HttpClientFloor:
    """``http.client`` keep-alive: ``request`` + ``getresponse`` + ``read`` + ``loads``."""

    def __init__(self, host: str, port: int, sid: str) -> None:
        self.conn = http.client.HTTPConnection(host, port, timeout=60)
        self.conn.connect()
        self.headers = {
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "Mcp-Session-Id": sid, "MCP-Protocol-Version": PROTOCOL_VERSION,
        }

    def run(self, items: list[Item]) -> None:
        conn = self.conn
        request = conn.request
        getresponse = conn.getresponse
        headers = self.headers
        for rid, body in items:
            request("POST", PATH, body, headers)
            response = getresponse()
            data = response.read()
            if response.status != 200:
                raise RuntimeError(f"HTTP {response.status}: {data[:200]!r}")
            _result(loads(data), rid)

    def close(self) -> None:
        self.conn.close()


class SocketFloor:
    """A blocking socket: one ``sendall`` per request, the answer framed by ``bytes.find``."""

    def __init__(self, host: str, port: int, sid: str) -> None:
        self.sock = socket.create_connection((host, port), timeout=60)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.head = _head(host, port, sid)
        self.buf = b""

    def run(self, items: list[Item]) -> None:
        sock = self.sock
        sendall = sock.sendall
        recv = sock.recv
        head = self.head
        buf = self.buf
        for rid, body in items:
            sendall(head % len(body) + body)
            while (end := buf.find(b"\r\n\r\n")) < 0:
                chunk = recv(262144)
                if not chunk:
                    raise ConnectionError("server closed")
                buf += chunk
            status = buf[9:12]
            # Header names are case-insensitive: look at a lower-cased copy of the head.
            low = buf[:end].lower()
            i = low.find(b"\r\ncontent-length:")
            if status != b"200" or i < 0:
                raise RuntimeError(f"unexpected answer: {buf[:200]!r}")
            j = low.find(b"\r\n", i + 17)
            total = end + 4 + int(low[i + 17:j if j >= 0 else end])
            while len(buf) < total:
                chunk = recv(262144)
                if not chunk:
                    raise ConnectionError("server closed")
                buf += chunk
            _result(loads(buf[end + 4:total]), rid)
            buf = buf[total:]
        self.buf = buf

    def close(self) -> None:
        self.sock.close()


def run_threads(pool: ThreadPoolExecutor, clients: list[Any], items: list[Item]) -> None:
    """Spread ``items`` over the clients (one thread each, all in flight at once)."""
    width = len(clients)
    futures = [pool.submit(client.run, items[k::width]) for k, client in enumerate(clients)]
    for future in futures:
        future.result()


def warm_pool(width: int) -> ThreadPoolExecutor:
    """A thread pool whose ``width`` threads already exist."""
    pool = ThreadPoolExecutor(max_workers=width)
    barrier = threading.Barrier(width)
    for f in [pool.submit(barrier.wait) for _ in range(width)]:
        f.result()
    return pool


class _Conn(asyncio.Protocol):
    """One connection of :class:`AsyncFloor`: one request in flight."""

    def __init__(self) -> None:
        self.transport: Any = None
        self.buf = b""
        self.fut: asyncio.Future[Any] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        buf = self.buf + data if self.buf else data
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            self.buf = buf
            return
        low = buf[:end].lower()
        i = low.find(b"\r\ncontent-length:")
        if buf[9:12] != b"200" or i < 0:
            self._fail(RuntimeError(f"unexpected answer: {buf[:200]!r}"))
            return
        j = low.find(b"\r\n", i + 17)
        total = end + 4 + int(low[i + 17:j if j >= 0 else end])
        if len(buf) < total:
            self.buf = buf
            return
        self.buf = buf[total:]
        fut = self.fut
        self.fut = None
        if fut is not None and not fut.done():
            fut.set_result(loads(buf[end + 4:total]))

    def _fail(self, exc: BaseException) -> None:
        fut = self.fut
        self.fut = None
        if fut is not None and not fut.done():
            fut.set_exception(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(ConnectionError("server closed"))


class AsyncFloor:
    """asyncio, ``connections`` raw keep-alive connections; ``call`` awaits one answer."""

    def __init__(self, host: str, port: int, sid: str, connections: int) -> None:
        self.host = host
        self.port = port
        self.head = _head(host, port, sid)
        self.connections = connections
        self.idle: list[_Conn] = []

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        for _ in range(self.connections):
            _, conn = await loop.create_connection(_Conn, self.host, self.port)
            self.idle.append(conn)
        self._loop = loop

    async def call(self, item: Item) -> Any:
        rid, body = item
        idle = self.idle
        conn = idle.pop()
        fut = conn.fut = self._loop.create_future()
        conn.transport.write(self.head % len(body) + body)
        try:
            msg = await fut
        finally:
            idle.append(conn)
        return _result(msg, rid)

    def close(self) -> None:
        for conn in self.idle:
            conn.transport.close()
        self.idle.clear()


async def run_workers(call: Callable[[Any], Any], items: list[Any], width: int) -> None:
    """``width`` callers, each awaiting its share of ``items`` one after the other: exactly
    ``width`` calls in flight until the last ones."""

    async def worker(mine: list[Any]) -> None:
        for item in mine:
            await call(item)

    if width == 1:
        await worker(items)
    else:
        await asyncio.gather(*[worker(items[k::width]) for k in range(width)])
