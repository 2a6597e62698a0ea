"""A minimal, fast stdlib MCP echo server over Streamable HTTP, for the benchmarks.

One asyncio process, one ``asyncio.Protocol`` per connection (no streams, no tasks): the
requests a read completed are parsed in ``data_received`` (``bytes.find`` on the head,
``Content-Length`` bodies only) and all their answers go out in one ``write``. HTTP/1.1
keep-alive; ``Connection: close`` is honoured.

``POST /mcp``:

- ``initialize``: answered with a new ``Mcp-Session-Id`` (echoing the requested protocol
  version); every later POST must carry a known session id (400 without one, 404 with an
  unknown one);
- a notification or a response (``notifications/initialized``...): ``202 Accepted``;
- ``ping``, ``tools/list`` (one tool, ``echo``), ``tools/call`` of ``echo`` (the arguments
  come back as JSON text content); any other method: a JSON-RPC error ``-32601``.

Every answer is one ``application/json`` body with a ``Content-Length``. ``GET /mcp``: 405
(no standalone stream). ``DELETE /mcp``: 200 (the session is forgotten). ``GET /stats``
(not MCP: the benchmark's): ``{"cpu": <process CPU seconds>, "requests": <POSTs served>}``.

The garbage collector is off (nothing here makes cycles) and orjson is used when
importable, so that the server costs as little as possible and the benchmark measures the
client.

Run: ``python benchmarks/http_echo_server.py [--host 127.0.0.1] [--port 0]``; it prints
``PORT <n>`` on stdout once listening and exits when its stdin closes (or on SIGTERM/SIGINT).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import signal
import sys
import time
import uuid
from typing import Any

# The codec and the tool of the stdio echo server (this script's directory is on sys.path
# when it runs, and the benchmark imports it from there too).
from echo_server import TOOL, _dumps, _loads

SERVER_INFO = {"name": "bench-http-echo", "version": "1.0.0"}
PATH = b"/mcp"

_JSON_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
_INIT_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: %s\r\n"
    b"Content-Length: %d\r\n\r\n"
)
_ACCEPTED = b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"
_DELETED = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
_NOT_ALLOWED = b"HTTP/1.1 405 Method Not Allowed\r\nAllow: POST, DELETE\r\nContent-Length: 0\r\n\r\n"


def _error(status: bytes, message: str, close: bool = False) -> bytes:
    body = _dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}})
    return (
        b"HTTP/1.1 %s\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s"
        % (status, b"Connection: close\r\n" if close else b"", len(body), body)
    )


class State:
    """What the connections share: the sessions and the counters."""

    def __init__(self) -> None:
        self.sessions: set[bytes] = set()
        self.requests = 0


def _result(msg: dict[str, Any], state: State, new_session: list[bytes]) -> Any:
    """The JSON-RPC answer to one request (``None`` for a notification or a response)."""
    if "id" not in msg or "method" not in msg:
        return None
    rid = msg["id"]
    method = msg["method"]
    if method == "tools/call":
        params = msg.get("params") or {}
        if params.get("name") == "echo":
            text = _dumps(params.get("arguments") or {}).decode()
            return {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}}
        return {"jsonrpc": "2.0", "id": rid, "result": {
            "content": [{"type": "text", "text": f"unknown tool: {params.get('name')}"}], "isError": True}}
    if method == "ping":
        return {"jsonrpc": "2.0", "id": rid, "result": {}}
    if method == "tools/list":
        return {"jsonrpc": "2.0", "id": rid, "result": {"tools": [TOOL]}}
    if method == "initialize":
        params = msg.get("params") or {}
        sid = uuid.uuid4().hex.encode()
        state.sessions.add(sid)
        new_session.append(sid)
        return {"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": SERVER_INFO,
        }}
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"method not found: {method}"}}


def _header(head: bytes, name: bytes) -> bytes | None:
    """The value of header ``name`` (``b"\\r\\nname:"``, lower case) in a lower-cased head."""
    i = head.find(name)
    if i < 0:
        return None
    start = i + len(name)
    end = head.find(b"\r\n", start)
    return head[start:end if end >= 0 else len(head)].strip()


class Connection(asyncio.Protocol):
    """One client connection: parse what comes, answer in the same loop turn."""

    __slots__ = ("buf", "state", "transport")

    def __init__(self, state: State) -> None:
        self.state = state
        self.buf = b""
        self.transport: Any = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        buf = self.buf + data if self.buf else data
        out: list[bytes] = []
        close = False
        while True:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > 65536:
                    out.append(_error(b"431 Request Header Fields Too Large", "head too large", True))
                    close = True
                break
            head = buf[:end].lower()
            if b"\r\ntransfer-encoding:" in head:
                out.append(_error(b"411 Length Required", "only Content-Length bodies", True))
                close = True
                break
            length_raw = _header(head, b"\r\ncontent-length:")
            try:
                length = int(length_raw) if length_raw else 0
            except ValueError:
                out.append(_error(b"400 Bad Request", "bad Content-Length", True))
                close = True
                break
            total = end + 4 + length
            if len(buf) < total:
                break
            body = buf[end + 4:total]
            buf = buf[total:]
            answer = self.request(head, body)
            out.append(answer)
            if b"\r\nconnection: close" in head:
                close = True
                break
        self.buf = buf
        if out:
            self.transport.write(b"".join(out) if len(out) > 1 else out[0])
        if close:
            self.transport.close()

    def request(self, head: bytes, body: bytes) -> bytes:
        line_end = head.find(b"\r\n")
        line = head[:line_end] if line_end >= 0 else head
        parts = line.split(b" ")
        if len(parts) != 3:
            return _error(b"400 Bad Request", "bad request line")
        method, path, _ = parts
        if path != PATH:
            if path == b"/stats" and method == b"get":
                stats = _dumps({"cpu": time.process_time(), "requests": self.state.requests})
                return _JSON_HEAD % len(stats) + stats
            return _error(b"404 Not Found", "not found")
        if method == b"post":
            return self.post(head, body)
        if method == b"get":
            return _NOT_ALLOWED
        if method == b"delete":
            sid = _header(head, b"\r\nmcp-session-id:")
            if sid is not None:
                self.state.sessions.discard(sid)
            return _DELETED
        return _NOT_ALLOWED

    def post(self, head: bytes, body: bytes) -> bytes:
        state = self.state
        state.requests += 1
        try:
            msg = _loads(body)
        except ValueError:
            return _error(b"400 Bad Request", "parse error")
        sid = _header(head, b"\r\nmcp-session-id:")
        initializing = type(msg) is dict and msg.get("method") == "initialize"
        if not initializing:
            if sid is None:
                return _error(b"400 Bad Request", "missing Mcp-Session-Id")
            if sid not in state.sessions:
                return _error(b"404 Not Found", "unknown session")
        new_session: list[bytes] = []
        if type(msg) is list:
            answers = [a for a in (_result(m, state, new_session) for m in msg if type(m) is dict) if a is not None]
            answer: Any = answers or None
        elif type(msg) is dict:
            answer = _result(msg, state, new_session)
        else:
            return _error(b"400 Bad Request", "not a JSON-RPC message")
        if answer is None:
            return _ACCEPTED
        data = _dumps(answer)
        if new_session:
            return _INIT_HEAD % (new_session[0], len(data)) + data
        return _JSON_HEAD % len(data) + data


async def serve(host: str, port: int) -> None:
    loop = asyncio.get_running_loop()
    state = State()
    server = await loop.create_server(lambda: Connection(state), host, port, backlog=1024)
    bound = server.sockets[0].getsockname()[1]
    stop = loop.create_future()

    def quit_() -> None:
        if not stop.done():
            stop.set_result(None)

    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, quit_)

    def stdin_readable() -> None:
        try:
            data = os.read(0, 4096)
        except OSError:
            data = b""
        if not data:
            loop.remove_reader(0)
            quit_()

    with contextlib.suppress(OSError, ValueError, PermissionError):
        loop.add_reader(0, stdin_readable)
    gc.collect()
    gc.freeze()
    gc.disable()
    sys.stdout.write(f"PORT {bound}\n")
    sys.stdout.flush()
    try:
        await stop
    finally:
        server.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Streamable HTTP MCP echo server (benchmarks)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    opts = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(opts.host, opts.port))


if __name__ == "__main__":
    main()
