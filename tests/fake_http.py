"""The fake server (``mcphost.testing``) served over HTTP: Streamable HTTP and legacy HTTP+SSE.

For tests that run one body over every transport (``tests/transport_matrix.py``): the same
fake server spec a stdio entry runs (``mcphost.testing.server_config``) is served here, so
what a test asserts does not depend on the transport. Stdlib only (asyncio streams), on
127.0.0.1 with a free port; each session runs its own :class:`FakeServer` in a thread, fed
through a pipe as its stdin would be, whose output lines are routed to HTTP:

- Streamable HTTP (``/mcp/<key>``): the ``initialize`` POST opens a session
  (``Mcp-Session-Id``); a POSTed request is answered on an SSE stream of its own, which
  also carries what the server sends while it is open (progress to the request that asked
  for it, requests and notifications to the latest open request); what it sends with no
  request open goes on the standalone GET stream (kept until the client opens it); DELETE
  ends the session. Notifications and responses POSTed get 202.
- legacy HTTP+SSE (``GET /sse/<key>``): the stream announces ``/messages/<key>?session_id=``
  and carries every server message; the session ends with the stream.

``key`` names a spec given to :meth:`FakeHttpFront.config`, which turns an ``mcp.json`` of
fake server entries into one of remote entries for this front.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import itertools
import json
import os
import threading
from typing import Any

from http_listener import SSE_HEAD, Listener, chunk, event, plain, read_request
from inprocess import LineOutput, spec_of

from mcphost._json import dumps
from mcphost.testing.server import FakeServer

Msg = dict[str, Any]
#: The end of a stream, put on its queue.
END: Any = None


class Session:
    """One client session: its fake server, and where each of the server's messages goes."""

    def __init__(self, sid: str, spec: Msg, legacy: bool) -> None:
        self.sid = sid
        self.legacy = legacy
        loop = asyncio.get_running_loop()
        read_fd, self._write_fd = os.pipe()
        fake = FakeServer(spec, stdin_fd=read_fd, stdout=LineOutput(loop, self._on_line), stderr=io.StringIO())

        def run() -> None:
            try:
                fake.run()
            finally:
                os.close(read_fd)

        threading.Thread(target=run, name=f"fake-http-{sid}", daemon=True).start()
        #: Open request streams (Streamable HTTP), by request id, in the order they opened.
        self.streams: dict[Any, asyncio.Queue[Msg | None]] = {}
        self.tokens: dict[Any, Any] = {}  # progressToken -> request id
        #: The standalone GET stream (Streamable HTTP) or the event stream (legacy).
        self.general: asyncio.Queue[Msg | None] = asyncio.Queue()

    def to_server(self, message: Any) -> None:
        """Write what the client POSTed to the fake server's stdin."""
        if self._write_fd < 0:
            return
        if isinstance(message, dict) and "method" in message and "id" in message:
            token = ((message.get("params") or {}).get("_meta") or {}).get("progressToken")
            if token is not None:
                self.tokens[token] = message["id"]
        with contextlib.suppress(OSError):
            os.write(self._write_fd, dumps(message) + b"\n")

    def open_stream(self, request_id: Any) -> asyncio.Queue[Msg | None]:
        queue: asyncio.Queue[Msg | None] = asyncio.Queue()
        self.streams[request_id] = queue
        return queue

    def _on_line(self, line: bytes) -> None:
        message = json.loads(line)
        for msg in message if isinstance(message, list) else [message]:
            self._route(msg)

    def _route(self, msg: Msg) -> None:
        if self.legacy:
            self.general.put_nowait(msg)
            return
        if "method" not in msg and msg.get("id") in self.streams:
            self.streams.pop(msg["id"]).put_nowait(msg)  # the response ends its stream
            return
        if msg.get("method") == "notifications/progress":
            owner = self.tokens.get((msg.get("params") or {}).get("progressToken"))
            if owner in self.streams:
                self.streams[owner].put_nowait(msg)
                return
        if "method" in msg and self.streams:
            next(reversed(self.streams.values())).put_nowait(msg)
            return
        self.general.put_nowait(msg)

    def close(self) -> None:
        """End the session: stdin EOF ends the fake server; every stream ends."""
        if self._write_fd >= 0:
            os.close(self._write_fd)
            self._write_fd = -1
        self.general.put_nowait(END)
        for queue in self.streams.values():
            queue.put_nowait(END)


class FakeHttpFront:
    """Serve fake server specs over HTTP (``async with FakeHttpFront() as front``)."""

    def __init__(self) -> None:
        self.port = 0
        self.specs: dict[str, Msg] = {}
        self.sessions: dict[str, Session] = {}
        self._ids = itertools.count(1)
        self._listener = Listener(self._serve)

    async def __aenter__(self) -> FakeHttpFront:
        self.port = await self._listener.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        for session in self.sessions.values():
            session.close()
        await self._listener.close()

    def config(self, cfg: Msg, transport: str) -> Msg:
        """``cfg`` (fake server entries under ``mcpServers``) with every entry served here
        over ``transport`` (``"http"`` or ``"sse"``); the entry's other settings are kept."""
        servers = {}
        for name, entry in cfg["mcpServers"].items():
            key = f"{name}-{next(self._ids)}"
            self.specs[key] = spec_of(entry.get("args", []), name)
            path = f"/mcp/{key}" if transport == "http" else f"/sse/{key}"
            remote = {k: v for k, v in entry.items() if k not in ("command", "args", "env", "cwd")}
            servers[name] = {**remote, "type": transport, "url": f"http://127.0.0.1:{self.port}{path}"}
        return {**cfg, "mcpServers": servers}

    # -- HTTP -------------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            req = await read_request(reader)
            _, room, key = [*req.path.split("/"), "", ""][:3]
            if not await self._route(req.method, room, key, req.query, req.headers, req.body, reader, writer):
                return
            await writer.drain()

    async def _route(self, method: str, room: str, key: str, query: dict[str, str], headers: dict[str, str],
                     body: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer one HTTP request; false: the connection is over."""
        if key not in self.specs:
            writer.write(plain(404, b"no such server"))
            return True
        if room == "sse" and method == "GET":
            session = self._new_session(key, legacy=True)
            writer.write(SSE_HEAD)
            writer.write(chunk(event(f"/messages/{key}?session_id={session.sid}", name="endpoint")))
            await self._pour(session.general, reader, writer)
            session.close()  # the stream is the session
            self.sessions.pop(session.sid, None)
            return False
        if room == "messages" and method == "POST":
            session = self.sessions.get(query.get("session_id", ""))
            if session is None:
                writer.write(plain(404, b"no such session"))
                return True
            session.to_server(json.loads(body))
            writer.write(plain(202))
            return True
        if room != "mcp":
            writer.write(plain(404, b"not found"))
            return True
        session = self.sessions.get(headers.get("mcp-session-id", ""))
        if method == "POST":
            message = json.loads(body)
            extra: list[tuple[str, str]] = []
            if isinstance(message, dict) and message.get("method") == "initialize":
                session = self._new_session(key, legacy=False)
                extra.append(("Mcp-Session-Id", session.sid))
            if session is None:
                writer.write(plain(404, b"no such session"))
                return True
            if not (isinstance(message, dict) and "method" in message and "id" in message):
                session.to_server(message)
                writer.write(plain(202))
                return True
            stream = session.open_stream(message["id"])
            session.to_server(message)
            writer.write(SSE_HEAD[:-2] + b"".join(f"{k}: {v}\r\n".encode() for k, v in extra) + b"\r\n")
            try:
                await self._pour(stream, None, writer)
            finally:
                session.streams.pop(message["id"], None)
            return True
        if session is None:
            writer.write(plain(404, b"no such session"))
            return True
        if method == "GET":
            writer.write(SSE_HEAD)
            await self._pour(session.general, reader, writer)
            return False
        if method == "DELETE":
            session.close()
            self.sessions.pop(session.sid, None)
            writer.write(plain(200))
            return True
        writer.write(plain(405, b"method not allowed"))
        return True

    def _new_session(self, key: str, legacy: bool) -> Session:
        sid = f"s{next(self._ids)}"
        session = Session(sid, self.specs[key], legacy)
        self.sessions[sid] = session
        return session

    @staticmethod
    async def _pour(queue: asyncio.Queue[Msg | None], reader: asyncio.StreamReader | None,
                    writer: asyncio.StreamWriter) -> None:
        """Write the queue's messages as SSE events until it ends or, given the ``reader``
        of a stream that lasts, the client closes the connection (it sends nothing more on
        it). A request's stream (no reader) ends with its response."""
        gone = asyncio.ensure_future(reader.read(1)) if reader is not None else None
        try:
            while True:
                item = asyncio.ensure_future(queue.get())
                await asyncio.wait([item] if gone is None else [item, gone], return_when=asyncio.FIRST_COMPLETED)
                if not item.done():
                    item.cancel()
                    return
                msg = item.result()
                if msg is END:
                    break
                writer.write(chunk(event(json.dumps(msg), name="message")))
                await writer.drain()
                if gone is None and "method" not in msg:
                    break
            writer.write(b"0\r\n\r\n")
        finally:
            if gone is not None:
                gone.cancel()
