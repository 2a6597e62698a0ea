"""An MCP server over HTTP for the transport tests: Streamable HTTP and legacy HTTP+SSE.

Stdlib only (asyncio streams), on 127.0.0.1 with a free port. It answers ``initialize``,
``tools/list`` and ``tools/call`` itself, and switches make it misbehave.

Streamable HTTP (``/mcp``): JSON or SSE answers (``mode``), session ids (``sessions``),
202 for notifications and responses, the standalone GET stream (``get_stream``; 405
without), resumption of a broken stream with ``Last-Event-ID``, 404 for a session it no
longer knows (``restart()``), DELETE. Legacy HTTP+SSE: ``GET /sse`` announces
``/messages?session_id=...`` and carries every answer.

Tools: ``echo`` (its arguments as text), ``progress`` (two progress notifications on the
stream first), ``ask`` (asks the client ``sampling/createMessage`` and returns the answer's
text), ``notify`` (a log notification on the GET stream, then a result).

``fault`` (applied to every ``tools/call`` while set):

- ``reset``: a Content-Length head, part of the body, then a TCP reset;
- ``truncated_chunk``: a chunked body whose chunk stops short, then close;
- ``endless_headers``: a status line and headers that never end;
- ``sse_stops``: an SSE stream with a priming event (id, ``retry``) closed before the
  response; the response is served when the client resumes with ``Last-Event-ID``;
- ``sse_stops_always``: the same, and every resumption stops again;
- ``sse_stops_no_id``: the stream stops before the response with no event id;
- ``slow_body``: a head with Content-Length, then nothing;
- ``huge_length``: ``Content-Length: 10**12``;
- ``status``: ``fault_status`` (e.g. 503) with a text body;
- ``jsonrpc_error``: 400 with a JSON-RPC error for the request's id;
- ``redirect``: 307 to another URL;
- ``bad_type``: 200 with ``text/html``;
- ``junk_events``: an SSE answer of 3,000 events that are not JSON, then the response;
- ``big_event_notification`` / ``big_event_response``: an SSE answer whose log notification
  / response event is 10 KB (for a host with a small ``max_message_size``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import ssl
from dataclasses import dataclass, field
from typing import Any

from http_listener import SSE_HEAD, Listener, Request, chunk, event, head, plain, read_request

ECHO = {"name": "echo", "description": "Echo the arguments", "inputSchema": {"type": "object"}}
TOOLS = [ECHO] + [{"name": n, "inputSchema": {"type": "object"}} for n in ("progress", "ask", "notify")]
VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")


@dataclass
class Stream:
    """An SSE stream of the server: its events (kept for replay) and its pending answer."""

    number: int
    events: list[tuple[str, str]] = field(default_factory=list)  # (id, data)
    answer: dict[str, Any] | None = None  # a response held back by a fault
    stops: int = 0


class RemoteServer:
    """Serve MCP over HTTP on 127.0.0.1 (``async with RemoteServer() as server``)."""

    def __init__(self, *, mode: str = "json", sessions: bool = True, get_stream: bool = True,
                 delete_status: int = 200, version: str | None = None,
                 ssl_context: ssl.SSLContext | None = None, resources: bool = False) -> None:
        self.ssl_context = ssl_context
        self.resources = resources  # declare resources (with subscribe) and serve them
        self.tools = list(TOOLS)
        #: Every session is forgotten as soon as it is made (each message after initialize: 404).
        self.drop_sessions = False
        self.mode = mode  # "json" or "sse": how requests are answered
        self.sessions_enabled = sessions
        self.get_stream = get_stream
        self.delete_status = delete_status
        self.version = version
        self.fault: str | None = None
        self.fault_status = 503
        self.retry_ms = 50
        self.endpoint: str | None = None  # legacy: the endpoint event's data (None: the default)
        self.port = 0
        self.log: list[Request] = []
        self.received: list[dict[str, Any]] = []  # every JSON-RPC message received
        self.sessions: set[str] = set()
        self.deleted: list[str] = []
        self._ids = itertools.count(1)
        self._streams: dict[int, Stream] = {}
        self._get_queues: dict[str, asyncio.Queue[dict[str, Any] | None]] = {}
        self._legacy: dict[str, asyncio.Queue[dict[str, Any] | None]] = {}
        self._waiting: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()  # answers of the legacy transport
        self._listener = Listener(self._serve, ssl_context=ssl_context)
        self.get_opened = asyncio.Event()

    # -- life -------------------------------------------------------------------------------

    async def __aenter__(self) -> RemoteServer:
        self.port = await self._listener.start(self.port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._listener.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    @property
    def scheme(self) -> str:
        return "https" if self.ssl_context is not None else "http"

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}/mcp"

    @property
    def sse_url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}/sse"

    def restart(self) -> None:
        """Forget every session (a restarted server): old session ids get 404."""
        self.sessions.clear()
        for queue in self._get_queues.values():
            queue.put_nowait(None)
        self._get_queues.clear()

    def requests(self, method: str) -> list[Request]:
        return [r for r in self.log if r.method == method]

    def push(self, msg: dict[str, Any]) -> None:
        """A message on every open GET stream (Streamable HTTP) or event stream (legacy)."""
        for queue in [*self._get_queues.values(), *self._legacy.values()]:
            queue.put_nowait(msg)

    def end_streams(self) -> None:
        """End every GET stream and legacy event stream."""
        for queue in [*self._get_queues.values(), *self._legacy.values()]:
            queue.put_nowait(None)

    # -- HTTP -------------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            request = await read_request(reader)
            self.log.append(request)
            if not await self._route(request, writer):
                return

    async def _route(self, req: Request, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; false: close the connection."""
        if req.path == "/mcp":
            if req.method == "POST":
                return await self._post(req, writer)
            if req.method == "GET":
                return await self._get(req, writer)
            if req.method == "DELETE":
                sid = req.headers.get("mcp-session-id", "")
                self.deleted.append(sid)
                self.sessions.discard(sid)
                writer.write(plain(self.delete_status))
                return True
        if req.path == "/sse" and req.method == "GET":
            return await self._legacy_stream(writer)
        if req.path == "/messages" and req.method == "POST":
            return await self._legacy_post(req, writer)
        writer.write(plain(404, b"not found"))
        return True

    # -- Streamable HTTP --------------------------------------------------------------------

    async def _post(self, req: Request, writer: asyncio.StreamWriter) -> bool:
        msg = req.json()
        self.received.append(msg)
        sid = req.headers.get("mcp-session-id")
        is_init = isinstance(msg, dict) and msg.get("method") == "initialize"
        if self.sessions_enabled and not is_init and sid not in self.sessions:
            writer.write(plain(404, b'{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}',
                               "application/json"))
            return True
        if "method" not in msg or "id" not in msg:  # a response or a notification
            if "method" not in msg and msg.get("id") in self._waiting:
                self._waiting.pop(msg["id"]).set_result(msg)
            writer.write(plain(202))
            return True
        extra: list[tuple[str, str]] = []
        if is_init and self.sessions_enabled:
            sid = f"session-{next(self._ids)}"
            if not self.drop_sessions:
                self.sessions.add(sid)
            extra.append(("Mcp-Session-Id", sid))
        if msg["method"] == "tools/call" and self.fault is not None:
            return await self._faulty(msg, writer)
        if self.mode == "json":
            result = await self._answer(msg, None, sid)
            writer.write(plain(200, json.dumps(result).encode(), "application/json", extra))
            return True
        writer.write(head(200, [("Content-Type", "text/event-stream"), ("Transfer-Encoding", "chunked"), *extra]))
        stream = self._new_stream()
        result = await self._answer(msg, lambda m: self._stream_write(writer, stream, m), sid)
        self._stream_write(writer, stream, result)
        writer.write(b"0\r\n\r\n")
        return True

    def _new_stream(self) -> Stream:
        stream = Stream(next(self._ids))
        self._streams[stream.number] = stream
        return stream

    def _stream_write(self, writer: asyncio.StreamWriter, stream: Stream, msg: dict[str, Any]) -> None:
        event_id = f"{stream.number}-{len(stream.events) + 1}"
        data = json.dumps(msg)
        stream.events.append((event_id, data))
        writer.write(chunk(event(data, event_id, "message")))

    async def _answer(self, msg: dict[str, Any], send: Any, sid: str | None) -> dict[str, Any]:
        """The response to a request; ``send`` writes a message on its stream (or None)."""
        method, rid, params = msg["method"], msg["id"], msg.get("params") or {}
        if method == "initialize":
            asked = params.get("protocolVersion")
            version = self.version or (asked if asked in VERSIONS else VERSIONS[0])
            caps: dict[str, Any] = {"tools": {}, "logging": {}}
            if self.resources:
                caps["resources"] = {"subscribe": True}
            result: Any = {"protocolVersion": version, "capabilities": caps,
                           "serverInfo": {"name": "remote", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": self.tools}
        elif method == "resources/list" and self.resources:
            result = {"resources": [{"uri": "mem://a", "name": "a"}]}
        elif method == "resources/templates/list" and self.resources:
            result = {"resourceTemplates": []}
        elif method in ("resources/subscribe", "resources/unsubscribe", "logging/setLevel"):
            result = {}
        elif method == "tools/call":
            result = await self._tool(params, send, sid)
        elif method == "ping":
            result = {}
        else:
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no {method}"}}
        return {"jsonrpc": "2.0", "id": rid, "result": result}

    async def _tool(self, params: dict[str, Any], send: Any, sid: str | None) -> dict[str, Any]:
        name, args = params.get("name"), params.get("arguments") or {}
        text = json.dumps(args, sort_keys=True)
        if name == "progress" and send is not None:
            token = params.get("_meta", {}).get("progressToken")
            for n in (1, 2):
                send({"jsonrpc": "2.0", "method": "notifications/progress",
                      "params": {"progressToken": token, "progress": n, "total": 2}})
        elif name == "ask":
            rid = f"ask-{next(self._ids)}"
            future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
            self._waiting[rid] = future
            request = {"jsonrpc": "2.0", "id": rid, "method": "sampling/createMessage",
                       "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                                  "maxTokens": 5}}
            if send is not None and args.get("via") != "get":
                send(request)
            else:
                self.push(request)
            answer = await asyncio.wait_for(future, 10)
            text = answer["result"]["content"]["text"]
        elif name == "notify":
            self.push({"jsonrpc": "2.0", "method": "notifications/message",
                       "params": {"level": "info", "data": args.get("text", "hello")}})
        return {"content": [{"type": "text", "text": text}]}

    async def _faulty(self, msg: dict[str, Any], writer: asyncio.StreamWriter) -> bool:
        fault = self.fault
        response = json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                               "result": {"content": [{"type": "text", "text": "late"}]}}).encode()
        if fault == "reset":
            writer.write(head(200, [("Content-Type", "application/json"), ("Content-Length", str(len(response)))]))
            writer.write(response[:10])
            await writer.drain()
            writer.transport.abort()
            return False
        if fault == "truncated_chunk":
            writer.write(head(200, [("Content-Type", "application/json"), ("Transfer-Encoding", "chunked")]))
            writer.write(b"%x\r\n" % len(response) + response[:10])
            await writer.drain()
            return False
        if fault == "endless_headers":
            writer.write(b"HTTP/1.1 200 OK\r\n")
            with contextlib.suppress(ConnectionError):
                for n in range(100_000):
                    writer.write(b"X-Filler-%d: %s\r\n" % (n, b"y" * 100))
                    await writer.drain()
            return False
        if fault == "slow_body":
            writer.write(head(200, [("Content-Type", "application/json"), ("Content-Length", str(len(response)))]))
            await asyncio.sleep(3600)
            return False
        if fault == "huge_length":
            writer.write(head(200, [("Content-Type", "application/json"), ("Content-Length", str(10**12))]))
            await asyncio.sleep(3600)
            return False
        if fault == "status":
            writer.write(plain(self.fault_status, b"the upstream is down\n" + b"x" * 1000))
            return True
        if fault == "jsonrpc_error":
            body = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32602, "message": "bad arguments here"}}
            writer.write(plain(400, json.dumps(body).encode(), "application/json"))
            return True
        if fault == "redirect":
            writer.write(plain(307, b"", extra=[("Location", "http://127.0.0.1:1/elsewhere")]))
            return True
        if fault == "bad_type":
            writer.write(plain(200, b"<html>hello</html>", "text/html"))
            return True
        if fault in ("big_event_notification", "big_event_response"):
            stream = self._new_stream()
            writer.write(SSE_HEAD)
            note = {"jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "info", "data": "n" * (10_000 if fault == "big_event_notification" else 10)}}
            self._stream_write(writer, stream, note)
            if fault == "big_event_response":
                big = json.loads(response)
                big["result"]["content"][0]["text"] = "r" * 10_000
                self._stream_write(writer, stream, big)
            else:
                self._stream_write(writer, stream, json.loads(response))
            writer.write(b"0\r\n\r\n")
            return True
        if fault == "junk_events":
            stream = self._new_stream()
            writer.write(SSE_HEAD)
            writer.write(chunk(b"data: this is not JSON\n\n" * 3000))
            self._stream_write(writer, stream, json.loads(response))
            writer.write(b"0\r\n\r\n")
            return True
        if fault in ("sse_stops", "sse_stops_always", "sse_stops_no_id"):
            stream = self._new_stream()
            stream.answer = json.loads(response)
            writer.write(SSE_HEAD)
            if fault == "sse_stops_no_id":
                writer.write(chunk(b": nothing to see\n\n"))
            else:
                event_id = f"{stream.number}-0"
                stream.events.append((event_id, ""))
                writer.write(chunk(event("", event_id, retry=self.retry_ms)))
            stream.stops = 10**6 if fault == "sse_stops_always" else 0
            await writer.drain()
            return False
        raise AssertionError(f"unknown fault {fault!r}")

    async def _get(self, req: Request, writer: asyncio.StreamWriter) -> bool:
        sid = req.headers.get("mcp-session-id")
        if self.sessions_enabled and sid not in self.sessions:
            writer.write(plain(404, b"no such session"))
            return True
        last = req.headers.get("last-event-id")
        if last:
            return await self._resume(last, writer)
        if not self.get_stream:
            writer.write(plain(405, b"no GET stream here"))
            return True
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        key = sid or "-"
        self._get_queues[key] = queue
        writer.write(SSE_HEAD)
        self.get_opened.set()
        stream = self._new_stream()
        try:
            while True:
                msg = await queue.get()
                if msg is None:
                    writer.write(b"0\r\n\r\n")
                    return True
                self._stream_write(writer, stream, msg)
                await writer.drain()
        finally:
            if self._get_queues.get(key) is queue:
                del self._get_queues[key]

    async def _resume(self, last: str, writer: asyncio.StreamWriter) -> bool:
        number, _, after = last.partition("-")
        stream = self._streams.get(int(number)) if number.isdigit() else None
        if stream is None:
            writer.write(plain(400, b"unknown event id"))
            return True
        writer.write(SSE_HEAD)
        seen = int(after) if after.isdigit() else 0
        for event_id, data in stream.events[seen:]:
            writer.write(chunk(event(data, event_id, "message" if data else None)))
        if stream.stops > 0:  # stops again before the answer
            stream.stops -= 1
            event_id = f"{stream.number}-{len(stream.events)}"
            writer.write(chunk(event("", event_id, retry=self.retry_ms)))
            await writer.drain()
            return False
        if stream.answer is not None:
            self._stream_write(writer, stream, stream.answer)
            stream.answer = None
        writer.write(b"0\r\n\r\n")
        return True

    # -- legacy HTTP+SSE --------------------------------------------------------------------

    async def _legacy_stream(self, writer: asyncio.StreamWriter) -> bool:
        sid = f"legacy-{next(self._ids)}"
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._legacy[sid] = queue
        writer.write(SSE_HEAD)
        if self.endpoint != "":
            endpoint = self.endpoint if self.endpoint is not None else f"/messages?session_id={sid}"
            writer.write(chunk(event(endpoint, name="endpoint")))
        self.get_opened.set()
        try:
            while True:
                msg = await queue.get()
                if msg is None:
                    writer.write(b"0\r\n\r\n")
                    return False
                writer.write(chunk(event(json.dumps(msg), name="message")))
                await writer.drain()
        finally:
            self._legacy.pop(sid, None)

    async def _legacy_post(self, req: Request, writer: asyncio.StreamWriter) -> bool:
        queue = self._legacy.get(req.query.get("session_id", ""))
        if queue is None:
            writer.write(plain(404, b"Could not find session"))
            return True
        msg = req.json()
        self.received.append(msg)
        if self.fault == "status" and msg.get("method") == "tools/call":
            writer.write(plain(self.fault_status, b"the upstream is down"))
            return True
        writer.write(plain(202, b"Accepted"))
        if "method" not in msg:
            if msg.get("id") in self._waiting:
                self._waiting.pop(msg["id"]).set_result(msg)
        elif "id" in msg:
            task = asyncio.get_running_loop().create_task(self._legacy_answer(msg, queue))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return True

    async def _legacy_answer(self, msg: dict[str, Any], queue: asyncio.Queue[dict[str, Any] | None]) -> None:
        queue.put_nowait(await self._answer(msg, queue.put_nowait, None))
