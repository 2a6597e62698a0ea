"""A small MCP server for the Talk-2-Tables example: tools and resources, over stdio or legacy SSE.

mcphost is a client; the example's two servers need a server side, and the document asks for
servers that speak "both stdio and SSE transports" with the standard library only. This module
owns that side:

- :class:`MCPServer`: the JSON-RPC 2.0 dispatcher of the MCP methods the example uses
  (``initialize``, ``ping``, ``tools/list``, ``tools/call``, ``resources/list``,
  ``resources/read``, ``resources/templates/list``), with version negotiation;
- :meth:`MCPServer.serve_stdio`: newline-delimited JSON on stdin/stdout (MCP "stdio"
  transport: one message a line, nothing else on stdout; logs go to stderr);
- :class:`SseServer`: the HTTP+SSE transport of MCP 2024-11-05 on asyncio streams: ``GET /sse``
  opens an event stream whose first event is ``endpoint`` (the URI to POST to),
  ``POST /messages?session_id=...`` takes one message and answers ``202 Accepted``, and every
  answer travels back on the session's stream as an ``event: message``.

It is a teaching-size server, not a general one: no sampling, no subscriptions, no auth. Every
size a client controls is bounded (a line, a request head, a body, the sessions).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import logging
import os
import sys
import threading
import urllib.parse
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Union

logger = logging.getLogger("talk2tables.servers.mcpserver")

__all__ = ["MCPServer", "Resource", "SseServer", "Tool", "ToolFailure", "run"]

#: Newest first; a client asking for another one is answered with the newest (the spec's rule).
SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700, -32600, -32601, -32602, -32603)
#: MCP's "resource not found" code.
RESOURCE_NOT_FOUND = -32002

MAX_MESSAGE = 4 * 1024 * 1024   # one JSON-RPC message (a stdio line, a POST body)
MAX_HEAD = 16 * 1024            # an HTTP request's head
MAX_SESSIONS = 64               # open SSE streams at once
MAX_QUEUED = 1024               # answers waiting on one SSE stream

Result = Union[dict[str, Any], Awaitable[dict[str, Any]]]


class ToolFailure(Exception):
    """Raised by a tool handler: the call's result is ``isError: true`` with this text."""


class RpcError(Exception):
    """A JSON-RPC error answer."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


@dataclass
class Tool:
    """One tool: its MCP description and the function that runs it (arguments -> structured result)."""

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Callable[[dict[str, Any]], Result]


@dataclass
class Resource:
    """One resource: its MCP description and the function that gives its text."""

    uri: str
    name: str
    description: str
    read: Callable[[], str]
    mime_type: str = "application/json"


@dataclass
class MCPServer:
    """The MCP methods of a server made of :class:`Tool` and :class:`Resource` objects."""

    name: str
    version: str = "1.0.0"
    instructions: str = ""
    tools: dict[str, Tool] = field(default_factory=dict)
    resources: dict[str, Resource] = field(default_factory=dict)
    #: Called once when the server is closed (what it opened, e.g. a database connection).
    closers: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        """Release what the server holds (its closers run once, in reverse order)."""
        closers, self.closers = self.closers, []
        for closer in reversed(closers):
            closer()

    def add_tool(self, tool: Tool) -> None:
        self.tools[tool.name] = tool

    def add_resource(self, resource: Resource) -> None:
        self.resources[resource.uri] = resource

    # -- JSON-RPC -----------------------------------------------------------------------

    async def handle(self, message: Any) -> Any:
        """The answer to one message (a list for a batch), or None for a notification."""
        if isinstance(message, list):
            if not message:
                return _error(None, INVALID_REQUEST, "empty batch")
            answers = [await self.handle(m) for m in message]
            return [a for a in answers if a is not None] or None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return _error(None, INVALID_REQUEST, "not a JSON-RPC 2.0 message")
        method, msg_id = message.get("method"), message.get("id")
        if not isinstance(method, str):
            return None  # a response to us: this server sends no requests
        params = message.get("params") or {}
        if "id" not in message:
            logger.debug("notification %s", method)
            return None
        try:
            if not isinstance(params, dict):
                raise RpcError(INVALID_PARAMS, "params must be an object")
            result = await self._call(method, params)
        except RpcError as exc:
            return _error(msg_id, exc.code, exc.message, exc.data)
        except Exception as exc:  # a bug of a handler must not end the server
            logger.exception("method %s failed", method)
            return _error(msg_id, INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
        return {"jsonrpc": "2.0", "id": msg_id, "result": result}

    async def _call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "initialize":
            asked = params.get("protocolVersion")
            version = asked if asked in SUPPORTED_VERSIONS else SUPPORTED_VERSIONS[0]
            capabilities: dict[str, Any] = {}
            if self.tools:
                capabilities["tools"] = {"listChanged": False}
            if self.resources:
                capabilities["resources"] = {"listChanged": False, "subscribe": False}
            result: dict[str, Any] = {"protocolVersion": version, "capabilities": capabilities,
                                      "serverInfo": {"name": self.name, "version": self.version}}
            if self.instructions:
                result["instructions"] = self.instructions
            return result
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": [{"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                              for t in self.tools.values()]}
        if method == "tools/call":
            return await self._call_tool(params)
        if method == "resources/list":
            return {"resources": [{"uri": r.uri, "name": r.name, "description": r.description,
                                   "mimeType": r.mime_type} for r in self.resources.values()]}
        if method == "resources/templates/list":
            return {"resourceTemplates": []}
        if method == "resources/read":
            uri = params.get("uri")
            resource = self.resources.get(uri) if isinstance(uri, str) else None
            if resource is None:
                raise RpcError(RESOURCE_NOT_FOUND, f"Resource not found: {uri!r}", {"uri": uri})
            return {"contents": [{"uri": resource.uri, "mimeType": resource.mime_type, "text": resource.read()}]}
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")

    async def _call_tool(self, params: dict[str, Any]) -> dict[str, Any]:
        name, arguments = params.get("name"), params.get("arguments") or {}
        tool = self.tools.get(name) if isinstance(name, str) else None
        if tool is None:
            raise RpcError(INVALID_PARAMS, f"Unknown tool: {name!r}")
        if not isinstance(arguments, dict):
            raise RpcError(INVALID_PARAMS, "arguments must be an object")
        try:
            out = tool.handler(arguments)
            structured = await out if inspect.isawaitable(out) else out
        except ToolFailure as exc:
            # A failure inside the tool is a result the model can read, not a protocol error.
            return {"content": [{"type": "text", "text": str(exc)}], "isError": True}
        return {"content": [{"type": "text", "text": json.dumps(structured, default=str)}],
                "structuredContent": structured, "isError": False}

    # -- stdio ----------------------------------------------------------------------------

    async def serve_stdio(self) -> None:
        """Serve stdin/stdout until stdin ends (MCP stdio: the client closing stdin is shutdown)."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_MESSAGE)
        if sys.platform == "win32":
            # The proactor loop cannot read an anonymous pipe: a thread reads and feeds the loop.
            threading.Thread(target=_feed, args=(loop, reader), daemon=True, name="stdin").start()
        else:
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        out = sys.stdout.buffer
        pending: set[asyncio.Task[None]] = set()

        def write(answer: Any) -> None:
            out.write(json.dumps(answer, separators=(",", ":")).encode() + b"\n")
            out.flush()

        async def answer(message: Any) -> None:
            reply = await self.handle(message)
            if reply is not None:
                write(reply)

        logger.info("%s serving on stdio", self.name)
        while True:
            try:
                line = await reader.readline()
            except ValueError:  # over MAX_MESSAGE: the rest of the line is unreadable
                write(_error(None, INVALID_REQUEST, f"message over {MAX_MESSAGE} bytes"))
                break
            if not line:
                break
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError as exc:
                write(_error(None, PARSE_ERROR, f"Parse error: {exc}"))
                continue
            # Each request is its own task, so a slow query does not hold a ping.
            task = loop.create_task(answer(message))
            pending.add(task)
            task.add_done_callback(pending.discard)
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        logger.info("%s: stdin closed, exiting", self.name)


def _feed(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader) -> None:
    while chunk := os.read(sys.stdin.fileno(), 65536):
        loop.call_soon_threadsafe(reader.feed_data, chunk)
    loop.call_soon_threadsafe(reader.feed_eof)


def _error(msg_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}


# -- legacy HTTP+SSE ---------------------------------------------------------------------------


class _Session:
    def __init__(self) -> None:
        self.id = uuid.uuid4().hex
        self.queue: asyncio.Queue[Any] = asyncio.Queue(MAX_QUEUED)


class SseServer:
    """The HTTP+SSE transport (MCP 2024-11-05) in front of one :class:`MCPServer`."""

    def __init__(self, server: MCPServer, host: str = "127.0.0.1", port: int = 0) -> None:
        self.server = server
        self.host, self.port = host, port
        self.sessions: dict[str, _Session] = {}
        self._listener: asyncio.AbstractServer | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self._answers: set[asyncio.Task[None]] = set()
        self._connections: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        """The SSE endpoint's URL (the one a configuration names)."""
        return f"http://{self.host}:{self.port}/sse"

    async def start(self) -> SseServer:
        self._listener = await asyncio.start_server(self._connection, self.host, self.port)
        self.port = self._listener.sockets[0].getsockname()[1]
        logger.info("%s serving SSE on %s", self.server.name, self.url)
        return self

    async def serve_forever(self) -> None:
        if self._listener is None:
            await self.start()
        assert self._listener is not None
        await self._listener.serve_forever()

    async def close(self) -> None:
        """Stop listening, end every stream and wait for the handlers."""
        if self._listener is not None:
            self._listener.close()
        for task in list(self._answers):
            task.cancel()
        # Connection handlers are not cancelled (asyncio's stream server of Python 3.11 reports
        # a cancelled handler as an unhandled error): closing their sockets ends them.
        for writer in list(self._connections):
            writer.close()
        pending = [*self._answers, *self._handlers]
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        if self._listener is not None:
            await self._listener.wait_closed()
        self.server.close()

    async def __aenter__(self) -> SseServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        self._connections.add(writer)
        try:
            # HTTP/1.1 keep-alive: the client may send its POSTs one after another on one connection.
            while await self._request(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # the client went away, or sent a head over the limit
        finally:
            self._handlers.discard(task)
            self._connections.discard(writer)
            writer.close()

    async def _request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one request; False when the connection is done."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return False
        if len(head) > MAX_HEAD:
            await _respond(writer, 431, "Request Header Fields Too Large", b"request head too large")
            return False
        lines = head.decode("latin-1").split("\r\n")
        try:
            method, target, _version = lines[0].split(" ", 2)
        except ValueError:
            await _respond(writer, 400, "Bad Request", b"malformed request line")
            return False
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                key, value = line.split(":", 1)
                headers[key.strip().lower()] = value.strip()
        url = urllib.parse.urlsplit(target)
        if method == "GET" and url.path == "/sse":
            await self._stream(reader, writer)
            return False
        if method == "POST" and url.path.rstrip("/") == "/messages":
            length = headers.get("content-length", "")
            if not length.isdigit():
                await _respond(writer, 411, "Length Required", b"Content-Length required")
                return False
            if int(length) > MAX_MESSAGE:
                await _respond(writer, 413, "Payload Too Large", b"message too large")
                return False
            body = await reader.readexactly(int(length))
            session_id = urllib.parse.parse_qs(url.query).get("session_id", [""])[0]
            await self._post(writer, session_id, body)
            return headers.get("connection", "").lower() != "close"
        await _respond(writer, 404, "Not Found", b"not found")
        return headers.get("connection", "").lower() != "close"

    async def _post(self, writer: asyncio.StreamWriter, session_id: str, body: bytes) -> None:
        session = self.sessions.get(session_id)
        if session is None:
            await _respond(writer, 404, "Not Found", b"unknown session")
            return
        try:
            message = json.loads(body)
        except ValueError:
            await _respond(writer, 400, "Bad Request", b"body is not JSON")
            return
        await _respond(writer, 202, "Accepted", b"Accepted")
        task = asyncio.get_running_loop().create_task(self._answer(session, message))
        self._answers.add(task)
        task.add_done_callback(self._answers.discard)

    async def _answer(self, session: _Session, message: Any) -> None:
        reply = await self.server.handle(message)
        if reply is not None:
            try:
                session.queue.put_nowait(reply)
            except asyncio.QueueFull:
                logger.warning("session %s: answer dropped, %d queued", session.id, MAX_QUEUED)

    async def _stream(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self.sessions) >= MAX_SESSIONS:
            await _respond(writer, 503, "Service Unavailable", b"too many sessions")
            return
        session = _Session()
        self.sessions[session.id] = session
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                     b"Connection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n")
        # The client ending the GET (EOF on the socket) ends the session.
        gone = asyncio.get_running_loop().create_task(_until_eof(reader))
        try:
            _chunk(writer, f"event: endpoint\ndata: /messages?session_id={session.id}\n\n")
            await writer.drain()
            while True:
                next_answer = asyncio.ensure_future(session.queue.get())
                done, _ = await asyncio.wait({next_answer, gone}, return_when=asyncio.FIRST_COMPLETED)
                if next_answer not in done:
                    next_answer.cancel()
                    break
                data = json.dumps(next_answer.result(), separators=(",", ":"))
                _chunk(writer, f"event: message\ndata: {data}\n\n")
                await writer.drain()
        finally:
            gone.cancel()
            self.sessions.pop(session.id, None)
            logger.debug("session %s closed", session.id)


async def _until_eof(reader: asyncio.StreamReader) -> None:
    # Whatever a client sends on its GET is read and dropped, never kept.
    while await reader.read(65536):
        pass


def _chunk(writer: asyncio.StreamWriter, text: str) -> None:
    data = text.encode()
    writer.write(b"%x\r\n%s\r\n" % (len(data), data))


async def _respond(writer: asyncio.StreamWriter, status: int, reason: str, body: bytes) -> None:
    writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\n"
                 f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    await writer.drain()


def run(build: Callable[[argparse.Namespace], MCPServer], description: str,
        argv: list[str] | None = None, default_port: int = 0,
        extra: Callable[[argparse.ArgumentParser], None] | None = None) -> int:
    """The command line of a server: ``--transport stdio|sse``, ``--host``, ``--port``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--transport", choices=("stdio", "sse"), default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=default_port)
    parser.add_argument("--log-level", default="WARNING")
    if extra is not None:
        extra(parser)
    args = parser.parse_args(argv)
    # stdout belongs to the protocol under stdio: logs go to stderr.
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    server = build(args)

    async def main() -> None:
        if args.transport == "stdio":
            await server.serve_stdio()
        else:
            sse = SseServer(server, args.host, args.port)
            await sse.start()
            print(f"{server.name}: {sse.url}", file=sys.stderr, flush=True)
            try:
                await sse.serve_forever()
            finally:
                await sse.close()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    return 0
